//! What re-walking the chains found (`api audit verify`, the console's Verify button).

use uuid::Uuid;

use crate::ids::TenantId;

/// The first place a chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BrokenLink {
    /// The chain's tenant.
    pub tenant_id: Option<TenantId>,
    /// The position at which the chain breaks.
    pub seq: i64,
    /// The event at that position, when it is there (else the one the head names, if any).
    pub event_id: Option<Uuid>,
    /// What is wrong, for a person.
    pub problem: String,
}

/// One chain's verdict.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ChainReport {
    /// The chain's tenant (`null`: refusals naming no tenant).
    pub tenant_id: Option<TenantId>,
    /// Events that held before the walk stopped.
    pub events_checked: u64,
    /// The chain's last position and hash, to keep elsewhere as an anchor.
    pub head: serde_json::Value,
    /// The first break, if any.
    pub broken: Option<BrokenLink>,
}

/// What a verification found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct VerifyReport {
    /// Events checked over all chains.
    pub events_checked: u64,
    /// Per chain.
    pub chains: Vec<ChainReport>,
    /// The first broken link found, if any.
    pub broken: Option<BrokenLink>,
}

impl VerifyReport {
    /// Whether every chain held.
    pub fn ok(&self) -> bool {
        self.broken.is_none()
    }
}
