//! The audit trail: one event per audited operation and outcome, kept per tenant in a SHA-256
//! hash chain so that an edit or deletion made directly in the database is detected by
//! [`verify`].
//!
//! Events are made at the edges that know the whole request (the management API and the
//! gateway: caller, request id, proxy, outcome) and handed to an [`AuditLog`], which encodes
//! them on the spot into its thread's lane; one [`AuditWriter`] per process commits what the
//! lanes hold in groups, one compressed block per chain.

mod block;
mod canonical;
mod chain;
pub mod codec;
mod denials;
mod encoded;
mod event;
mod head;
mod lanes;
mod list;
mod log;
mod resource_id;
mod store;
mod window;
mod writer;

/// `n` anonymous token reads of `tenant`: the events the block and chain tests seal.
#[cfg(test)]
fn test_events(n: usize, tenant: crate::TenantId) -> Vec<AuditEvent> {
    (0..n)
        .map(|_| {
            AuditEvent::success(
                tenant,
                AuditAction::TokenRead,
                Actor::Anonymous,
                vec![uuid::Uuid::new_v4().into()],
            )
        })
        .collect()
}

pub use block::{seal, seal_blocks, seal_encoded, AuditBlock, MAX_BLOCK_BYTES, MAX_BLOCK_EVENTS};
pub use canonical::{decode, encode, encode_legacy, link_hash, DecodeError, LegacyColumns};
pub use chain::{BrokenLink, ChainCheck};
pub use denials::WINDOW as DENIAL_WINDOW;
pub use encoded::{EncodedEvent, EncodedEvents};
pub use event::{
    Actor, AuditAction, AuditEvent, ChainedEvent, Outcome, Pruned, UnknownAction, MAX_TEXT_CHARS,
};
pub use head::{head_json, ChainHead, GENESIS};
pub use lanes::LANE_LIMIT;
pub use list::list;
pub use log::{AuditError, AuditLog, AuditStats, Durability, Pending};
pub use resource_id::ResourceId;
pub use store::{AuditAppender, AuditStore, BlockSpan, ChainAppend, ChainEvents};
pub use writer::AuditWriter;

use time::OffsetDateTime;

use crate::{error::StoreError, ids::TenantId};

/// What `GET /audit-events` narrows by; every given filter must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Any of these actions (empty: all).
    pub actions: Vec<AuditAction>,
    /// Events naming this resource.
    pub resource_id: Option<ResourceId>,
    /// Events by this actor.
    pub actor: Option<Actor>,
    /// Events with this outcome.
    pub outcome: Option<Outcome>,
    /// Events at or after this instant.
    pub from: Option<OffsetDateTime>,
    /// Events before this instant.
    pub to: Option<OffsetDateTime>,
}

impl AuditFilter {
    /// Whether nothing narrows the list.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether `event` passes every given filter.
    pub fn matches(&self, event: &AuditEvent) -> bool {
        (self.actions.is_empty() || self.actions.contains(&event.action))
            && self
                .resource_id
                .as_ref()
                .is_none_or(|id| event.resource_ids.contains(id))
            && self.actor.is_none_or(|a| a == event.actor)
            && self.outcome.is_none_or(|o| o == event.outcome)
            && self.from.is_none_or(|from| event.occurred_at >= from)
            && self.to.is_none_or(|to| event.occurred_at < to)
    }
}

/// Blocks read per query while verifying.
const VERIFY_BLOCKS: u32 = 64;

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

/// Re-walks the chains (all, or `tenant`'s only): every stored block of each, also those
/// outside what its head vouches for, from what retention left to the head. Events appended
/// while it runs are past the heads it read and are reported as outside them only if their
/// block was stored before the heads were read; run it again to be sure of such a report.
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
        let chain = head.tenant_id;
        let mut check = ChainCheck::new(head);
        let mut after = i64::MIN;
        let mut broken = None;
        'walk: loop {
            let blocks = store.audit_blocks(chain, after, VERIFY_BLOCKS).await?;
            let Some(end) = blocks.last().map(|b| b.first_seq) else {
                break;
            };
            for block in &blocks {
                if let Err(b) = check.check_block(block) {
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
