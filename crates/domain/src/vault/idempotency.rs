//! `Idempotency-Key`: the first answer to a creating request is kept, sealed, for
//! 24 hours and replayed to retries with the same key from the same application; the same key
//! with another request is refused.
//!
//! The boundary (HTTP) drives the protocol: [`Vault::claim_idempotency`] before running the
//! request, then [`Vault::complete_idempotency`] with a successful answer or
//! [`Vault::release_idempotency`] otherwise (a failed request is not remembered, so a retry
//! runs again). A replay is authorised again first ([`Vault::authorize_replay`]).
//!
//! The request is kept only as an HMAC under a per-tenant key (a plain hash of a body holding
//! a card number gave the number back to anyone with a copy of the database), and the answer
//! is sealed with the tenant's data key: it may hold a new API or proxy key.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{
    access::{GrantCheck, Principal},
    error::VaultError,
    store::{IdempotencyScope, StoreError},
    timestamp,
    validation::ValidationErrors,
};

use super::Vault;

/// How long an `Idempotency-Key` is remembered.
pub const IDEMPOTENCY_WINDOW: time::Duration = time::Duration::hours(24);

/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 255;

/// A claim whose request has not answered after this long is taken to be abandoned (its
/// process died): the next request with the key runs in its place.
const STALE_CLAIM: time::Duration = time::Duration::seconds(120);

/// Seal purpose of stored answers (bound, with the application and key, into the AAD).
const PURPOSE: &str = "idempotency-response";

/// A stored answer, replayed as it was first given, with what it took to give it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayedResponse {
    /// HTTP status.
    pub status: u16,
    /// JSON body (may hold a new API or proxy key: `Debug` prints only its length).
    pub body: String,
    /// The permission checks the first request passed; a replay needs them all again.
    pub checks: Vec<GrantCheck>,
    /// The resources the first request created, named by the replay's audit event.
    pub resources: Vec<crate::audit::ResourceId>,
}

/// The parts of a request that must match for a retry to be a replay.
#[derive(Clone, Copy)]
pub struct IdempotentRequest<'a> {
    /// `POST`.
    pub method: &'a str,
    /// The path.
    pub path: &'a str,
    /// The query string.
    pub query: &'a str,
    /// The body's bytes.
    pub body: &'a [u8],
}

impl std::fmt::Debug for IdempotentRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotentRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("body_len", &self.body.len())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ReplayedResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayedResponse")
            .field("status", &self.status)
            .field("body_len", &self.body.len())
            .field("checks", &self.checks.len())
            .finish_non_exhaustive()
    }
}

/// What to do with a request carrying an `Idempotency-Key`.
#[derive(Debug)]
pub enum IdempotencyClaim {
    /// Run it, then complete or release the ticket.
    Run(IdempotencyTicket),
    /// The key's first request answered this: send it again, run nothing.
    Replay(ReplayedResponse),
    /// The key was first used with another method, path or body (422).
    Mismatch,
    /// The key's first request is still running (wait and claim again, or 409).
    InFlight,
}

/// The right, held by one request, to answer for its key.
#[derive(Debug)]
pub struct IdempotencyTicket {
    scope: IdempotencyScope,
    claimed_at: OffsetDateTime,
}

/// Checks an `Idempotency-Key` value: 1–255 printable ASCII characters.
pub fn validate_key(key: &str) -> Result<(), ValidationErrors> {
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| (0x20..0x7f).contains(&b))
    {
        return Err(ValidationErrors::single(
            "Idempotency-Key",
            format!("must be 1 to {MAX_KEY_LEN} printable ASCII characters"),
        ));
    }
    Ok(())
}

impl Vault {
    /// Claims `key` for the caller's `request`, or says why not.
    pub async fn claim_idempotency(
        &self,
        caller: &Principal,
        key: &str,
        request: IdempotentRequest<'_>,
    ) -> Result<IdempotencyClaim, VaultError> {
        validate_key(key)?;
        let request_hash = self
            .keys
            .data_key(self.store.as_ref(), caller.tenant_id())
            .await?
            .request_hash(&[
                request.method.as_bytes(),
                request.path.as_bytes(),
                request.query.as_bytes(),
                request.body,
            ]);
        let scope = IdempotencyScope {
            tenant_id: caller.tenant_id(),
            application_id: caller.application_id(),
            key: key.to_string(),
        };
        // At most: a stale or expired record released, then claimed anew.
        for _ in 0..3 {
            let now = timestamp::now();
            let Some(existing) = self
                .store
                .claim_idempotency_key(&scope, &request_hash, now)
                .await?
            else {
                return Ok(IdempotencyClaim::Run(IdempotencyTicket {
                    scope,
                    claimed_at: now,
                }));
            };
            let expired = existing.created_at <= now - IDEMPOTENCY_WINDOW;
            let abandoned =
                existing.response_sealed.is_none() && existing.created_at <= now - STALE_CLAIM;
            if expired || abandoned {
                self.store
                    .release_idempotency_key(&scope, existing.created_at)
                    .await?;
                continue;
            }
            if existing.request_hash != request_hash {
                return Ok(IdempotencyClaim::Mismatch);
            }
            return match existing.response_sealed {
                None => Ok(IdempotencyClaim::InFlight),
                Some(sealed) => Ok(IdempotencyClaim::Replay(
                    self.open_response(&scope, &sealed).await?,
                )),
            };
        }
        Ok(IdempotencyClaim::InFlight)
    }

    /// Stores the successful answer of the request holding `ticket`, for replay.
    pub async fn complete_idempotency(
        &self,
        ticket: IdempotencyTicket,
        response: &ReplayedResponse,
    ) -> Result<(), VaultError> {
        let scope = &ticket.scope;
        let key = self
            .keys
            .data_key(self.store.as_ref(), scope.tenant_id)
            .await?;
        let plain = serde_json::to_vec(response)
            .map_err(|e| StoreError::Backend(format!("encoding an idempotent answer: {e}")))?;
        let sealed = key.seal_record(scope.tenant_id, PURPOSE, &record_id(scope), &plain)?;
        self.store
            .complete_idempotency_key(scope, &sealed)
            .await
            .map_err(Into::into)
    }

    /// Forgets the claim of a request that did not succeed, so a retry runs again.
    pub async fn release_idempotency(&self, ticket: IdempotencyTicket) -> Result<(), VaultError> {
        self.store
            .release_idempotency_key(&ticket.scope, ticket.claimed_at)
            .await
            .map_err(Into::into)
    }

    async fn open_response(
        &self,
        scope: &IdempotencyScope,
        sealed: &[u8],
    ) -> Result<ReplayedResponse, VaultError> {
        let key = self
            .keys
            .data_key(self.store.as_ref(), scope.tenant_id)
            .await?;
        let plain = key.open_record(scope.tenant_id, PURPOSE, &record_id(scope), sealed)?;
        serde_json::from_slice(&plain)
            .map_err(|e| StoreError::Corrupt(format!("stored idempotent answer: {e}")).into())
    }

    /// `Ok` when `caller` passes today every check the first request passed, so the stored
    /// answer may be replayed to it; else the refusal of the first check that fails.
    pub fn authorize_replay(
        &self,
        caller: &Principal,
        answer: &ReplayedResponse,
    ) -> Result<(), VaultError> {
        answer
            .checks
            .iter()
            .try_for_each(|check| caller.require_again(check))
    }
}

/// The sealed answer's record id: its application and key, so a row moved to another key or
/// application fails to open.
fn record_id(scope: &IdempotencyScope) -> Vec<u8> {
    let mut id = scope.application_id.to_string().into_bytes();
    id.push(0);
    id.extend_from_slice(scope.key.as_bytes());
    id
}

#[cfg(test)]
mod tests {
    use super::validate_key;

    #[test]
    fn a_stored_answer_does_not_print_its_body() {
        let answer = super::ReplayedResponse {
            status: 201,
            body: r#"{"key":"key_SECRETSECRET"}"#.to_string(),
            checks: Vec::new(),
            resources: Vec::new(),
        };
        let printed = format!(
            "{answer:?} {:?}",
            super::IdempotencyClaim::Replay(answer.clone())
        );
        assert!(!printed.contains("SECRET"), "{printed}");
        assert!(printed.contains("201"));
    }

    #[test]
    fn keys_are_one_to_255_printable_ascii_characters() {
        assert!(validate_key("a").is_ok());
        assert!(validate_key(&"k".repeat(255)).is_ok());
        assert!(validate_key("order 42 / retry ~").is_ok());
        assert!(validate_key("").is_err());
        assert!(validate_key(&"k".repeat(256)).is_err());
        assert!(validate_key("tab\there").is_err());
        assert!(validate_key("é").is_err());
    }
}
