//! Audit events of management calls.
//!
//! The authentication middleware knows who called, which route matched and how the call
//! ended; a handler knows what it touched. So a handler that did an audited operation marks
//! its response with [`Audited`] (the actions and resource ids), and the middleware turns the
//! mark — or a 401/403 on an audited route, with the problem's detail as the reason — into
//! events, records them and, in sync mode, waits for their commit before the response leaves.
//! A response without a mark records nothing: reads that returned no data, and replays of an
//! idempotent request (the original call recorded its events).

use actix_web::{http::Method, HttpResponse};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent, ResourceId},
    Principal,
};

/// What a handler did, for the audit trail: one entry per event.
#[derive(Debug, Clone, Default)]
pub(crate) struct Audited(pub(crate) Vec<Marked>);

/// One event a handler marked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marked {
    /// What was done.
    pub(crate) action: AuditAction,
    /// To which resources.
    pub(crate) ids: Vec<ResourceId>,
    /// What the event says beside (its `reason`): a write that set a mask showing whole
    /// fields of the data names them (docs/api.md, "Masks").
    pub(crate) note: Option<String>,
}

/// The public reason of a refusal, set on 401/403 problem responses.
#[derive(Debug, Clone)]
pub(crate) struct DenialReason(pub(crate) String);

/// Marks `response` as having done `action` on `ids`.
pub(crate) fn mark(
    mut response: HttpResponse,
    action: AuditAction,
    ids: impl IntoIterator<Item = impl Into<ResourceId>>,
) -> HttpResponse {
    let ids = ids.into_iter().map(Into::into).collect();
    let mut extensions = response.extensions_mut();
    let marked = Marked {
        action,
        ids,
        note: None,
    };
    match extensions.get_mut::<Audited>() {
        Some(audited) => audited.0.push(marked),
        None => {
            extensions.insert(Audited(vec![marked]));
        }
    }
    drop(extensions);
    response
}

/// Adds `note` to the last event of `action` marked on `response`, when there is a note.
pub(crate) fn note(
    mut response: HttpResponse,
    action: AuditAction,
    note: Option<String>,
) -> HttpResponse {
    if let Some(note) = note {
        let mut extensions = response.extensions_mut();
        if let Some(marked) = extensions
            .get_mut::<Audited>()
            .and_then(|a| a.0.iter_mut().rev().find(|m| m.action == action))
        {
            marked.note = Some(note);
        }
    }
    response
}

/// The action a refused call on `pattern` was attempting, when the route is audited: the
/// route modules' own path constants, so a route's path is written once.
pub(crate) fn attempted(method: &Method, pattern: &str) -> Option<AuditAction> {
    use crate::paths::{
        APPLICATION, APPLICATIONS, APPLICATION_KEY, APPLICATION_KEYS, CHILD, CHILDREN, DETOKENIZE,
        PROXIES, PROXY, REGENERATE, SEARCH, SEARCH_V2, TOKEN, TOKENIZE, TOKENS, TOKENS_V2, WEBHOOK,
        WEBHOOKS,
    };
    use AuditAction as A;
    let action = match (method.as_str(), pattern) {
        ("POST", TOKENS | TOKENIZE | CHILDREN) => A::TokenCreated,
        ("GET", TOKENS | TOKEN | CHILDREN) => A::TokenRead,
        ("POST", SEARCH | DETOKENIZE | SEARCH_V2) => A::TokenRead,
        ("GET", TOKENS_V2) => A::TokenRead,
        ("PATCH", TOKEN) => A::TokenUpdated,
        ("DELETE", TOKEN) => A::TokenDeleted,
        ("POST", CHILD) => A::AssociationCreated,
        ("DELETE", CHILD) => A::AssociationDeleted,
        ("POST", APPLICATIONS) => A::ApplicationCreated,
        ("PUT", APPLICATION) => A::ApplicationUpdated,
        ("DELETE", APPLICATION) => A::ApplicationDeleted,
        ("POST", REGENERATE) => A::ApplicationKeyRegenerated,
        ("POST", APPLICATION_KEYS) => A::ApplicationKeyCreated,
        ("DELETE", APPLICATION_KEY) => A::ApplicationKeyRevoked,
        ("POST", PROXIES) => A::ProxyCreated,
        ("PUT", PROXY) => A::ProxyUpdated,
        ("DELETE", PROXY) => A::ProxyDeleted,
        ("POST", WEBHOOKS) => A::WebhookCreated,
        ("PUT", WEBHOOK) => A::WebhookUpdated,
        ("DELETE", WEBHOOK) => A::WebhookDeleted,
        _ => return None,
    };
    Some(action)
}

/// Who made a call and how to find it again.
pub(crate) struct CallContext<'a> {
    /// The authenticated caller (`None`: the key was refused).
    pub(crate) principal: Option<&'a Principal>,
    /// The request's id.
    pub(crate) request_id: Option<&'a str>,
    /// The page's `Origin`, on a call from a browser.
    pub(crate) origin: Option<&'a str>,
}

impl CallContext<'_> {
    fn actor(&self) -> Actor {
        self.principal
            .map_or(Actor::Anonymous, |p| Actor::Application(p.application_id()))
    }

    fn finish(&self, event: AuditEvent) -> AuditEvent {
        let event = event.with_origin(self.origin);
        match self.request_id {
            Some(id) => event.with_request_id(id),
            None => event,
        }
    }

    /// The events of a handler's mark.
    pub(crate) fn successes(&self, audited: &Audited) -> Vec<AuditEvent> {
        let Some(principal) = self.principal else {
            return Vec::new();
        };
        audited
            .0
            .iter()
            .map(|m| {
                let event = AuditEvent::success(
                    principal.tenant_id(),
                    m.action,
                    self.actor(),
                    m.ids.clone(),
                );
                self.finish(match &m.note {
                    Some(note) => event.with_note(note),
                    None => event,
                })
            })
            .collect()
    }

    /// The event of a refused attempt at `action` on the resources the path names.
    pub(crate) fn denial(
        &self,
        action: AuditAction,
        path_ids: Vec<ResourceId>,
        reason: &str,
    ) -> AuditEvent {
        self.finish(AuditEvent::denied(
            self.principal.map(Principal::tenant_id),
            action,
            self.actor(),
            path_ids,
            reason,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_accumulate_in_order() {
        let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        let res = mark(
            HttpResponse::Created().finish(),
            AuditAction::TokenCreated,
            [a],
        );
        let res = mark(res, AuditAction::AssociationCreated, [b, a]);
        let res = note(res, AuditAction::TokenCreated, Some("n".into()));
        let audited = res.extensions().get::<Audited>().cloned().expect("marked");
        let marks: Vec<_> = audited
            .0
            .iter()
            .map(|m| (m.action, m.ids.clone(), m.note.clone()))
            .collect();
        assert_eq!(
            marks,
            vec![
                (AuditAction::TokenCreated, vec![a.into()], Some("n".into())),
                (
                    AuditAction::AssociationCreated,
                    vec![b.into(), a.into()],
                    None
                )
            ]
        );
    }

    #[test]
    fn only_audited_routes_name_an_attempt() {
        assert_eq!(
            attempted(&Method::GET, "/tokens/{id}"),
            Some(AuditAction::TokenRead)
        );
        assert_eq!(
            attempted(&Method::POST, "/applications/{id}/regenerate"),
            Some(AuditAction::ApplicationKeyRegenerated)
        );
        assert_eq!(attempted(&Method::GET, "/applications"), None);
        assert_eq!(attempted(&Method::GET, "/proxies/{id}"), None);
        assert_eq!(attempted(&Method::GET, "/audit-events"), None);
    }
}
