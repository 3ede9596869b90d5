//! The gateway's audit events: one `token.detokenized` per invocation that
//! substituted tokens, the `req.svc` calls of its transforms, and refused invocations (401/403)
//! with their reason.
//!
//! The detokenization event is submitted as soon as the tokens are resolved, and its commit
//! awaited only when the answer is ready: in sync mode the commit overlaps the destination's
//! round trip instead of adding to it, and the caller never sees an answer the trail does not
//! hold.

use std::sync::Mutex;

use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent, Pending, ResourceId},
    ProxyId, TenantId,
};

use crate::{
    error::{ErrorKind, GatewayError},
    handoff::Halt,
    shared::Shared,
};

/// What the audit trail needs to know of one invocation, filled in by the stages (only the
/// cheap fields while the trail is off).
#[derive(Debug, Default)]
pub(crate) struct AuditNotes {
    /// The proxy's tenant, once the proxy is known.
    pub(crate) tenant: Option<TenantId>,
    /// The authenticated caller, if any.
    pub(crate) actor: Option<Actor>,
    /// The tokens the request references, once parsed (named by a refusal).
    pub(crate) requested: Vec<ResourceId>,
    /// Events made by the stages, not yet submitted.
    pub(crate) events: Vec<AuditEvent>,
    /// Events submitted whose commit is still to be awaited.
    pub(crate) pending: Vec<Pending>,
    /// The destination's `host:port`, once known.
    pub(crate) destination: Option<String>,
    /// An ephemeral proxy's request.
    pub(crate) ephemeral: bool,
}

impl AuditNotes {
    fn actor(&self) -> Actor {
        self.actor.unwrap_or(Actor::Anonymous)
    }
}

/// Collects the events of `req.svc` calls made by one transform run.
#[derive(Debug)]
pub(crate) struct SvcAudit {
    tenant: TenantId,
    actor: Actor,
    proxy: ProxyId,
    request_id: String,
    events: Mutex<Vec<AuditEvent>>,
}

impl SvcAudit {
    pub(crate) fn new(tenant: TenantId, actor: Actor, proxy: ProxyId, request_id: &str) -> Self {
        Self {
            tenant,
            actor,
            proxy,
            request_id: request_id.to_string(),
            events: Mutex::new(Vec::new()),
        }
    }

    fn push(&self, event: AuditEvent) {
        let event = event
            .with_proxy(self.proxy)
            .with_request_id(&self.request_id);
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }

    /// A `req.svc` call did `action` on `ids`.
    pub(crate) fn success(&self, action: AuditAction, ids: Vec<ResourceId>) {
        if !ids.is_empty() {
            self.push(AuditEvent::success(self.tenant, action, self.actor, ids));
        }
    }

    /// A `req.svc` call attempting `action` on `ids` was refused with `status` (only 401
    /// and 403 are refusals; other failures are not recorded).
    pub(crate) fn refused(
        &self,
        action: AuditAction,
        ids: Vec<ResourceId>,
        status: u16,
        reason: &str,
    ) {
        if matches!(status, 401 | 403) {
            self.push(AuditEvent::denied(
                Some(self.tenant),
                action,
                self.actor,
                ids,
                reason,
            ));
        }
    }

    /// The collected events.
    pub(crate) fn into_events(self) -> Vec<AuditEvent> {
        self.events.into_inner().unwrap_or_default()
    }
}

/// An event of this invocation, with its request id, proxy and destination.
fn invocation_event(
    notes: &AuditNotes,
    proxy: Option<ProxyId>,
    request_id: &str,
    event: AuditEvent,
) -> AuditEvent {
    let event = event
        .with_request_id(request_id)
        .with_destination(notes.destination.as_deref(), notes.ephemeral);
    match proxy {
        Some(p) => event.with_proxy(p),
        None => event,
    }
}

/// Records that the tokens `ids` were substituted into the forwarded request (submitted now,
/// committed by the time the caller is answered).
pub(crate) async fn record_detokenized(
    gw: &Shared,
    notes: &mut AuditNotes,
    proxy: Option<ProxyId>,
    request_id: &str,
    ids: Vec<ResourceId>,
) -> Result<(), Halt> {
    let (Some(tenant), false) = (notes.tenant, ids.is_empty()) else {
        return Ok(());
    };
    let event = invocation_event(
        notes,
        proxy,
        request_id,
        AuditEvent::success(tenant, AuditAction::TokenDetokenized, notes.actor(), ids),
    );
    let pending = gw
        .vault
        .audit()
        .submit(vec![event])
        .await
        .map_err(|e| unavailable(&e))?;
    notes.pending.push(pending);
    Ok(())
}

/// Before answering: records a refusal (401/403) as a denied `token.detokenized`, submits what
/// the stages collected, and waits for every commit (sync mode). When the trail cannot be
/// written, the answer becomes a 503.
pub(crate) async fn audited<T>(
    gw: &Shared,
    notes: &mut AuditNotes,
    proxy: Option<ProxyId>,
    request_id: &str,
    result: Result<T, Halt>,
) -> Result<T, Halt> {
    if !gw.vault.audit().is_on() {
        return result;
    }
    if let Err(Halt::Fail(e)) = &result {
        if matches!(e.kind(), ErrorKind::Unauthenticated | ErrorKind::Forbidden) {
            let event = AuditEvent::denied(
                notes.tenant,
                AuditAction::TokenDetokenized,
                notes.actor(),
                std::mem::take(&mut notes.requested),
                e.detail(),
            );
            let event = invocation_event(notes, proxy, request_id, event);
            notes.events.push(event);
        }
    }
    let log = gw.vault.audit();
    let events = std::mem::take(&mut notes.events);
    let mut outcome = match log.submit(events).await {
        Ok(pending) => pending.committed().await,
        Err(e) => Err(e),
    };
    for pending in notes.pending.drain(..) {
        let committed = pending.committed().await;
        if outcome.is_ok() {
            outcome = committed;
        }
    }
    match outcome {
        Ok(()) => result,
        Err(e) => {
            tracing::error!(request_id, error = %e, "audit events not committed; answering 503");
            Err(unavailable(&e))
        }
    }
}

fn unavailable(e: &tessera_domain::audit::AuditError) -> Halt {
    GatewayError::new(
        ErrorKind::Unavailable,
        "the audit trail cannot be written; the request may have reached the destination",
    )
    .with_source(e.to_string())
    .into()
}
