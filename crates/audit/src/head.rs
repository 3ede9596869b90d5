//! Where a chain stands: its head, kept by the store next to the chain and printed by
//! `api audit verify` as an anchor to keep elsewhere.

use serde_json::{json, Value};
use uuid::Uuid;

use tessera_domain::{hex, ids::TenantId};

/// The `prev_hash` of a chain's first event.
pub const GENESIS: [u8; 32] = [0; 32];

/// Where one tenant's chain stands: its last event, and what retention removed before its
/// first remaining one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// The chain's tenant (`None`: the deployment's chain of refusals naming no tenant).
    pub tenant_id: Option<TenantId>,
    /// The last event's `seq` (0: none yet).
    pub last_seq: i64,
    /// The last event's hash ([`GENESIS`] when none).
    pub last_hash: [u8; 32],
    /// The last event's id.
    pub last_event_id: Option<Uuid>,
    /// Events up to this `seq` were removed by retention.
    pub pruned_seq: i64,
    /// The hash of the last removed event ([`GENESIS`] when none).
    pub pruned_hash: [u8; 32],
}

impl ChainHead {
    /// A chain without events.
    pub fn empty(tenant_id: Option<TenantId>) -> Self {
        Self {
            tenant_id,
            last_seq: 0,
            last_hash: GENESIS,
            last_event_id: None,
            pruned_seq: 0,
            pruned_hash: GENESIS,
        }
    }
}

/// The JSON form of a head, as `api audit verify` prints it (an anchor to keep elsewhere).
pub fn head_json(head: &ChainHead) -> Value {
    json!({
        "tenant_id": head.tenant_id.map(|t| t.to_string()),
        "last_seq": head.last_seq,
        "last_hash": hex::encode(&head.last_hash),
    })
}
