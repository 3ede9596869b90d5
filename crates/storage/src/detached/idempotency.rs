//! Idempotency keys: [`IdempotencyStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{IdempotencyRecord, IdempotencyScope, IdempotencyStore, StoreError};
use time::OffsetDateTime;

detached! {
    IdempotencyStore {
        spawned fn claim_idempotency_key(scope: &IdempotencyScope, request_hash: &[u8; 32], now: OffsetDateTime) -> Option<IdempotencyRecord>;
        spawned fn complete_idempotency_key(scope: &IdempotencyScope, response_sealed: &[u8]) -> ();
        spawned fn release_idempotency_key(scope: &IdempotencyScope, created_at: OffsetDateTime) -> ();
        spawned fn delete_idempotency_keys_before(before: OffsetDateTime) -> u64;
    }
}
