//! # tessera-audit
//!
//! The audit trail: what `tessera-domain` says is audited ([`AuditEvent`]s), recorded per
//! tenant in a SHA-256 hash chain so that an edit or deletion made directly in the database is
//! detected by [`verify`].
//!
//! Events are made at the edges that know the whole request (the management API, the console
//! and the gateway: caller, request id, proxy, outcome) and handed to the vault's
//! [`tessera_domain::audit::AuditLog`]; the trail [`start`] builds encodes them on the spot into the calling thread's
//! lane, and one [`AuditWriter`] per process commits what the lanes hold in groups, one
//! compressed block per chain, through the [`AuditStore`] port that the storage crate
//! implements.
//!
//! ```text
//!   edge ──► AuditLog (domain port) ──► log: lanes ──► writer ──► block (canonical, codec)
//!                                                                  │
//!   api audit verify ──► verify ──► chain ◄── AuditStore ◄─────────┘
//! ```

mod block;
mod canonical;
mod chain;
pub mod codec;
mod denials;
mod encoded;
mod head;
mod lanes;
mod list;
mod log;
mod store;
mod window;
mod writer;

/// `n` anonymous token reads of `tenant`: the events the block and chain tests seal.
#[cfg(test)]
fn test_events(n: usize, tenant: TenantId) -> Vec<AuditEvent> {
    (0..n)
        .map(|_| {
            AuditEvent::success(
                tenant,
                tessera_domain::audit::AuditAction::TokenRead,
                tessera_domain::audit::Actor::Anonymous,
                vec![uuid::Uuid::new_v4().into()],
            )
        })
        .collect()
}

pub use block::{seal, seal_blocks, seal_encoded, AuditBlock, MAX_BLOCK_BYTES, MAX_BLOCK_EVENTS};
pub use canonical::{decode, encode, encode_legacy, link_hash, DecodeError, LegacyColumns};
pub use chain::ChainCheck;
pub use denials::WINDOW as DENIAL_WINDOW;
pub use encoded::{EncodedEvent, EncodedEvents};
pub use head::{head_json, ChainHead, GENESIS};
pub use lanes::LANE_LIMIT;
pub use list::list;
pub use log::{reader, start};
pub use store::{AuditAppender, AuditStore, BlockSpan, ChainAppend, ChainEvents};
pub use writer::AuditWriter;

use tessera_domain::{
    audit::{AuditEvent, ChainReport, VerifyReport},
    error::StoreError,
    ids::TenantId,
};

/// Blocks read per query while verifying.
const VERIFY_BLOCKS: u32 = 64;

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
