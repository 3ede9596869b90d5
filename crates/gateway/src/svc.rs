//! `req.svc` (SUPPLEMENT §7): the small management API a proxy's transforms reach, answered
//! in-process as the proxy's application, with its permissions, and recorded in the audit
//! trail under it. Not a stage: the engine calls it while a transform runs.

use serde_json::{json, Value};
use tessera_domain::{
    audit::AuditAction, binding::Target, token::TokenView, NewToken, Principal, TokenId, Vault,
    VaultError,
};
use tessera_service::problem::class_status;
use tessera_transform_runtime::{HostError, HostOp};

use crate::audit::SvcAudit;

/// The status and message the management API would have answered (SUPPLEMENT §7).
fn host_error(e: VaultError) -> HostError {
    HostError {
        status: class_status(e.class()).as_u16(),
        message: e.public_message(),
    }
}

/// Who answers a transform's `req.svc` calls: the vault, as the proxy's application
/// (`principal`), for a proxy sending to `target`, recording into `audit` when the proxy has
/// an audit trail.
#[derive(Clone, Copy)]
pub(crate) struct SvcHost<'a> {
    pub(crate) vault: &'a Vault,
    pub(crate) principal: &'a Principal,
    pub(crate) target: Option<&'a Target>,
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

fn payload_id(payload: &Value) -> Vec<uuid::Uuid> {
    payload
        .as_str()
        .and_then(|s| s.parse().ok())
        .into_iter()
        .collect()
}

/// [`SvcHost::call`] without the refusal's audit event. `target` is where the proxy sends its
/// requests: a token bound to other destinations is not handed to its transform (issue 27),
/// which could otherwise send it there itself.
async fn svc_call(host: SvcHost<'_>, op: HostOp, payload: Value) -> Result<Value, HostError> {
    let SvcHost {
        vault,
        principal,
        target,
        audit,
    } = host;
    let bad = |m: String| HostError {
        status: 400,
        message: m,
    };
    let create = |request: Value| async move {
        let input: NewToken = serde_json::from_value(request)
            .map_err(|e| bad(format!("invalid token request: {e}")))?;
        let token = vault
            .create_token(principal, input)
            .await
            .map_err(host_error)?;
        let id = *token.id.as_uuid();
        serde_json::to_value(TokenView::without_data(token, principal))
            .map(|view| (view, id))
            .map_err(|e| bad(e.to_string()))
    };
    let id = |payload: &Value| {
        payload
            .as_str()
            .and_then(|s| s.parse::<TokenId>().ok())
            .ok_or_else(|| HostError {
                status: 400,
                message: "a token id is required".into(),
            })
    };
    match op {
        HostOp::Tokenize | HostOp::Create => {
            // One event per call, listing what it created (an array may fail part-way: the
            // tokens created before the failure are recorded).
            let mut created = Vec::new();
            let answer = match payload {
                Value::Array(requests) if op == HostOp::Tokenize => {
                    let mut out = Vec::with_capacity(requests.len());
                    let mut failed = None;
                    for request in requests {
                        match create(request).await {
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
                request => create(request).await.map(|(view, id)| {
                    created.push(id);
                    view
                }),
            };
            if let Some(audit) = audit {
                audit.success(AuditAction::TokenCreatedByTransform, created);
            }
            answer
        }
        HostOp::Retrieve => {
            let token = vault
                .get_token(principal, id(&payload)?)
                .await
                .map_err(host_error)?;
            if let Some(bound) = &token.destinations {
                let allowed = target.is_some_and(|t| bound.allows(&t.host, t.port));
                if !allowed {
                    return Err(host_error(VaultError::DestinationRefused(format!(
                        "token {} may not be read by this proxy's transform: its destination is not allowed for it",
                        token.id
                    ))));
                }
            }
            if let Some(audit) = audit {
                audit.success(AuditAction::TokenReadByTransform, vec![*token.id.as_uuid()]);
            }
            serde_json::to_value(TokenView::with_data(token)).map_err(|e| bad(e.to_string()))
        }
        HostOp::Delete => {
            let token = id(&payload)?;
            vault
                .delete_token(principal, token)
                .await
                .map_err(host_error)?;
            if let Some(audit) = audit {
                audit.success(AuditAction::TokenDeleted, vec![*token.as_uuid()]);
            }
            Ok(json!({}))
        }
    }
}

#[cfg(test)]
mod tests {
    use tessera_domain::VaultError;

    use super::host_error;

    /// `req.svc` refusals carry the status the API would have answered (SUPPLEMENT §7).
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
