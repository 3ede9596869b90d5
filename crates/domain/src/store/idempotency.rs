//! Stored `Idempotency-Key`s.

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::ids::{ApplicationId, TenantId};

/// An `Idempotency-Key` as stored: which request first used it, and its answer once known.
#[derive(Debug, Clone)]
pub struct IdempotencyRecord {
    /// SHA-256 over the first request's method, path and body.
    pub request_hash: [u8; 32],
    /// That request's answer, sealed with the tenant's data key; `None` while it runs.
    pub response_sealed: Option<Vec<u8>>,
    /// When the key was first used.
    pub created_at: OffsetDateTime,
}

/// Which key: per tenant and application (two applications never share keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyScope {
    /// Tenant.
    pub tenant_id: TenantId,
    /// Calling application.
    pub application_id: ApplicationId,
    /// The key as sent.
    pub key: String,
}

/// Stored `Idempotency-Key`s.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Records `scope` as in use by the request hashing to `request_hash`, unless it already
    /// is: `None` when this call claimed it, else the existing record.
    async fn claim_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        request_hash: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Stores the sealed answer of the request that claimed `scope`.
    async fn complete_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        response_sealed: &[u8],
    ) -> Result<(), StoreError>;
    /// Forgets `scope` if it was first used at `created_at` (a failed first request, so a
    /// retry may run again; or an expired key, so it may be claimed anew).
    async fn release_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        created_at: OffsetDateTime,
    ) -> Result<(), StoreError>;
    /// Deletes keys first used before `before`; returns how many.
    async fn delete_idempotency_keys_before(
        &self,
        before: OffsetDateTime,
    ) -> Result<u64, StoreError>;
}
