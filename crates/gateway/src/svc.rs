//! `req.svc` (docs/api.md, "Transforms"): the small management API a proxy's transforms reach, answered
//! in-process as the proxy's application, with its permissions, and recorded in the audit
//! trail under it. Not a stage: the engine calls it while a transform runs.
//!
//! A destination-bound token's data is handed only to a request transform of a proxy whose
//! destination the binding allows, and taints the invocation ([`BoundReads`]): its context is
//! not kept warm, it may not create tokens any more, and `crate::transform` withholds whatever
//! it would answer the caller itself.

use std::sync::Mutex;

use serde_json::{json, Value};
use tessera_domain::{
    audit::{AuditAction, ResourceId},
    binding::{self, Destinations, Target},
    token::TokenView,
    NewToken, Permission, Principal, TokenId, Vault, VaultError,
};
use tessera_service::problem::class_status;
use tessera_transform_runtime::{HostError, HostOp, Taint};

use crate::audit::SvcAudit;

/// The status and message the management API would have answered (docs/api.md, "Transforms").
fn host_error(e: VaultError) -> HostError {
    HostError {
        status: class_status(e.class()).as_u16(),
        message: e.public_message(),
    }
}

/// Which of a proxy's transforms is running: what a request transform returns goes to the
/// destination, what a response transform returns goes to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The request transform.
    Request,
    /// The response transform.
    Response,
}

/// The destination-bound tokens one invocation was handed, and its taint, which the engine
/// reads to discard the context and the gateway to withhold the transform's own answer (see
/// docs/api.md, "Brokering credentials").
#[derive(Debug, Default)]
pub(crate) struct BoundReads {
    taint: Taint,
    ids: Mutex<Vec<ResourceId>>,
}

impl BoundReads {
    /// The invocation's taint.
    pub(crate) fn taint(&self) -> &Taint {
        &self.taint
    }

    /// The bound tokens handed out, in order.
    pub(crate) fn ids(&self) -> Vec<ResourceId> {
        self.ids.lock().map(|ids| ids.clone()).unwrap_or_default()
    }

    fn handed_out(&self, id: ResourceId) {
        self.taint.mark();
        if let Ok(mut ids) = self.ids.lock() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
}

/// Who answers a transform's `req.svc` calls: the vault, as the proxy's application
/// (`principal`), for the `stage` transform of a proxy sending to `target`, noting bound tokens
/// handed out in `bound`, and recording into `audit` when the proxy has an audit trail.
#[derive(Clone, Copy)]
pub(crate) struct SvcHost<'a> {
    pub(crate) vault: &'a Vault,
    pub(crate) principal: &'a Principal,
    pub(crate) target: Option<&'a Target>,
    pub(crate) stage: Stage,
    pub(crate) bound: &'a BoundReads,
    pub(crate) audit: Option<&'a SvcAudit>,
}

impl SvcHost<'_> {
    /// One `req.svc` call, made in-process as the proxy's application with its permissions.
    pub(crate) async fn call(self, op: HostOp, payload: Value) -> Result<Value, HostError> {
        let audit = self.audit;
        // What a refusal would name, taken before the payload is consumed.
        let attempt = audit.map(|_| match op {
            HostOp::Tokenize | HostOp::Create => (AuditAction::TokenCreatedByTransform, vec![]),
            HostOp::Retrieve => (AuditAction::TokenReadByTransform, payload_id(&payload)),
            HostOp::Delete => (AuditAction::TokenDeleted, payload_id(&payload)),
        });
        let answer = svc_call(self, op, payload).await;
        if let (Some(audit), Some((action, ids)), Err(e)) = (audit, attempt, &answer) {
            audit.refused(action, ids, e.status, &e.message);
        }
        answer
    }
}

fn payload_id(payload: &Value) -> Vec<ResourceId> {
    payload
        .as_str()
        .and_then(|s| s.parse().ok())
        .into_iter()
        .collect()
}

fn bad(message: String) -> HostError {
    HostError {
        status: 400,
        message,
    }
}

/// [`SvcHost::call`] without the refusal's audit event.
async fn svc_call(host: SvcHost<'_>, op: HostOp, payload: Value) -> Result<Value, HostError> {
    // An expired application's keys are refused, and so is acting as it (docs/api.md,
    // "Application keys").
    if host.principal.is_expired(tessera_domain::timestamp::now()) {
        return Err(HostError {
            status: 401,
            message: "the proxy's application has expired".into(),
        });
    }
    let id = |payload: &Value| {
        payload
            .as_str()
            .and_then(|s| s.parse::<TokenId>().ok())
            .ok_or_else(|| bad("a token id is required".into()))
    };
    match op {
        HostOp::Tokenize | HostOp::Create => create(host, op, payload).await,
        HostOp::Retrieve => {
            let token = host
                .vault
                .get_token(host.principal, id(&payload)?)
                .await
                .map_err(host_error)?;
            if let Some(destinations) = &token.destinations {
                hand_out_bound(host, &token.id, destinations)?;
            }
            if let Some(audit) = host.audit {
                audit.success(AuditAction::TokenReadByTransform, vec![(&token.id).into()]);
            }
            let view = TokenView::read(token, host.principal, Permission::TokenRead);
            serde_json::to_value(view).map_err(|e| bad(e.to_string()))
        }
        HostOp::Delete => {
            let token = id(&payload)?;
            host.vault
                .delete_token(host.principal, token.clone())
                .await
                .map_err(host_error)?;
            if let Some(audit) = host.audit {
                audit.success(AuditAction::TokenDeleted, vec![token.into()]);
            }
            Ok(json!({}))
        }
    }
}

/// Whether the transform may be handed the data of token `id`, bound to `destinations`: only a
/// request transform (whose result goes to the destination, not to the caller) of a proxy whose
/// destination the binding allows. Handing it out taints the invocation.
fn hand_out_bound(
    host: SvcHost<'_>,
    id: &TokenId,
    destinations: &Destinations,
) -> Result<(), HostError> {
    let refused = |message: String| host_error(VaultError::DestinationRefused(message));
    if host.stage == Stage::Response {
        return Err(refused(format!(
            "token {id} is destination-bound: a destination-bound token cannot be read in a response transform"
        )));
    }
    let Some(target) = host.target else {
        return Err(refused(format!(
            "token {id} may not be read by this proxy's transform: the proxy's destination has no host"
        )));
    };
    binding::check(id, Some(destinations), target, false).map_err(host_error)?;
    host.bound.handed_out(ResourceId::from(id));
    Ok(())
}

/// `tokenize` and `tokens.create`: one event per call, listing what it created (an array may
/// fail part-way: the tokens created before the failure are recorded). Refused once the
/// invocation was handed a bound token, so that it cannot keep an unbound copy.
async fn create(host: SvcHost<'_>, op: HostOp, payload: Value) -> Result<Value, HostError> {
    if host.bound.taint().is_marked() {
        return Err(host_error(VaultError::DestinationRefused(
            "req.svc cannot create tokens in an invocation that read a destination-bound token"
                .into(),
        )));
    }
    let one = |request: Value| async move {
        let input: NewToken = serde_json::from_value(request)
            .map_err(|e| bad(format!("invalid token request: {e}")))?;
        let token = host
            .vault
            .create_token(host.principal, input)
            .await
            .map_err(host_error)?;
        let id = ResourceId::from(&token.id);
        serde_json::to_value(TokenView::written(
            token,
            host.principal,
            Permission::TokenCreate,
        ))
        .map(|view| (view, id))
        .map_err(|e| bad(e.to_string()))
    };
    let mut created = Vec::new();
    let answer = match payload {
        Value::Array(requests) if op == HostOp::Tokenize => {
            let mut out = Vec::with_capacity(requests.len());
            let mut failed = None;
            for request in requests {
                match one(request).await {
                    Ok((view, id)) => {
                        out.push(view);
                        created.push(id);
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            failed.map_or(Ok(Value::Array(out)), Err)
        }
        request => one(request).await.map(|(view, id)| {
            created.push(id);
            view
        }),
    };
    if let Some(audit) = host.audit {
        audit.success(AuditAction::TokenCreatedByTransform, created);
    }
    answer
}

#[cfg(test)]
mod tests {
    use tessera_domain::VaultError;

    use super::host_error;

    /// `req.svc` refusals carry the status the API would have answered (docs/api.md, "Transforms").
    #[test]
    fn host_errors_carry_the_api_status() {
        use tessera_domain::{error::Resource, store::StoreError};
        let e = host_error(VaultError::NotFound(Resource::Token));
        assert_eq!((e.status, e.message.as_str()), (404, "token not found"));
        let e = host_error(VaultError::Store(StoreError::Unavailable("down".into())));
        assert_eq!(e.status, 503);
        assert!(!e.message.contains("down"), "{}", e.message);
        let e = host_error(VaultError::Store(StoreError::Backend(
            "secret detail".into(),
        )));
        assert_eq!(e.status, 500);
        assert!(!e.message.contains("secret"), "{}", e.message);
    }
}
