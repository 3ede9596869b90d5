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
mod verify;
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
pub use verify::verify;
pub use writer::AuditWriter;

#[cfg(test)]
use tessera_domain::{audit::AuditEvent, ids::TenantId};
