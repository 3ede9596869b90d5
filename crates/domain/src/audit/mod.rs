//! The audit trail (issue 16): one event per audited operation and outcome, kept per tenant
//! in a SHA-256 hash chain so that an edit or deletion made directly in the database is
//! detected by [`verify`].
//!
//! Events are made at the edges that know the whole request (the management API and the
//! gateway: caller, request id, proxy, outcome) and handed to an [`AuditLog`], which commits
//! them in groups.

mod chain;
mod event;
mod log;

pub use chain::{extend, head_json, link_hash, to_hex, BrokenLink, ChainCheck, ChainHead, GENESIS};
pub use event::{
    Actor, AuditAction, AuditEvent, ChainedEvent, Outcome, UnknownAction, MAX_TEXT_CHARS,
};
pub use log::{AuditError, AuditLog, AuditStats, AuditWriter, Durability, Pending};

use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    ids::TenantId,
    store::{AuditStore, StoreError},
};

/// What `GET /audit-events` narrows by; every given filter must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Any of these actions (empty: all).
    pub actions: Vec<AuditAction>,
    /// Events naming this resource.
    pub resource_id: Option<Uuid>,
    /// Events by this actor.
    pub actor: Option<Actor>,
    /// Events with this outcome.
    pub outcome: Option<Outcome>,
    /// Events at or after this instant.
    pub from: Option<OffsetDateTime>,
    /// Events before this instant.
    pub to: Option<OffsetDateTime>,
}

/// Events read per query while verifying.
const VERIFY_PAGE: u32 = 1000;

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

/// What [`verify`] found.
#[derive(Debug, Clone, serde::Serialize)]
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

/// Re-walks the chains (all, or `tenant`'s only) from what retention left to their heads.
/// Events appended while it runs are past the heads it read and are not checked.
pub async fn verify(
    store: &dyn AuditStore,
    tenant: Option<TenantId>,
) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport {
        events_checked: 0,
        chains: Vec::new(),
        broken: None,
    };
    for head in store.audit_chain_heads().await? {
        if tenant.is_some() && head.tenant_id != tenant {
            continue;
        }
        let anchor = head_json(&head);
        let (chain, last) = (head.tenant_id, head.last_seq);
        let mut check = ChainCheck::new(head);
        let mut after = check.start_seq() - 1;
        let mut broken = None;
        'walk: loop {
            let page = store
                .audit_chain_page(chain, after, last, VERIFY_PAGE)
                .await?;
            let Some(end) = page.last().map(|e| e.seq) else {
                break;
            };
            for event in &page {
                if let Err(b) = check.check(event) {
                    broken = Some(b);
                    break 'walk;
                }
            }
            after = end;
        }
        let checked = check.checked();
        if broken.is_none() {
            broken = check.finish().err();
        }
        report.events_checked += checked;
        if report.broken.is_none() {
            report.broken.clone_from(&broken);
        }
        report.chains.push(ChainReport {
            tenant_id: chain,
            events_checked: checked,
            head: anchor,
            broken,
        });
    }
    Ok(report)
}
