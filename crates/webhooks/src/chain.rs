//! Reading a tenant's audit chain on from a webhook's cursor, checking every link: an event is
//! handed on only if its stored line hashes, after the previous event's hash (the cursor's
//! for the first), to its stored hash, and its position is the next one. A row edited,
//! removed or slipped in between is refused, and the webhook stops there (docs/webhooks.md,
//! "Delivery").

use tessera_audit::{decode, link_hash, AuditBlock, AuditStore};
use tessera_domain::{audit::AuditEvent, error::StoreError, ids::TenantId};

/// One event of the chain, checked.
#[derive(Debug, Clone)]
pub struct Linked {
    /// Its position.
    pub seq: i64,
    /// Its hash (the cursor after it).
    pub hash: [u8; 32],
    /// The event.
    pub event: AuditEvent,
}

/// Why the chain could not be read on from the cursor.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The chain does not continue from the cursor as it should: an edit, a removal or an
    /// insertion in the database, or retention removed events not yet delivered.
    #[error("the audit chain is broken after position {after}: {why}")]
    Broken {
        /// The cursor's position.
        after: i64,
        /// What was found.
        why: String,
    },
}

/// Blocks read per query.
const BLOCKS_PER_READ: u32 = 16;

/// The checked events of `tenant`'s chain after `seq` (whose hash is `hash`), at most
/// `max` of them (more when the last block read holds more).
pub async fn read_after(
    store: &dyn AuditStore,
    tenant: TenantId,
    seq: i64,
    hash: [u8; 32],
    max: usize,
) -> Result<Vec<Linked>, ChainError> {
    let blocks = store
        .audit_blocks_after_seq(Some(tenant), seq, BLOCKS_PER_READ)
        .await?;
    let (mut at, mut prev) = (seq, hash);
    let mut out = Vec::new();
    for block in &blocks {
        link_block(block, &mut at, &mut prev, &mut out)?;
        if out.len() >= max {
            break;
        }
    }
    Ok(out)
}

/// Appends `block`'s events after position `*at`, checking each link from `*prev`.
fn link_block(
    block: &AuditBlock,
    at: &mut i64,
    prev: &mut [u8; 32],
    out: &mut Vec<Linked>,
) -> Result<(), ChainError> {
    let after = *at;
    let broken = |why: String| ChainError::Broken { after, why };
    if let Some(why) = &block.unreadable {
        return Err(broken(format!("an unreadable block: {why}")));
    }
    let mut seq = block.first_seq - 1;
    let mut linked_from = block.prev_hash;
    for (line, stored) in block.entries() {
        seq += 1;
        let stored = stored.ok_or_else(|| broken("a hash is missing".into()))?;
        if link_hash(&linked_from, line) != stored {
            return Err(broken(format!(
                "the event at {seq} does not hash as stored"
            )));
        }
        let from = std::mem::replace(&mut linked_from, stored);
        if seq <= *at {
            continue;
        }
        // The next event must be the next position, linked from the cursor's hash.
        if seq != *at + 1 || from != *prev {
            return Err(broken(format!("the event at {seq} does not follow on")));
        }
        let (line_seq, event) =
            decode(line).map_err(|e| broken(format!("the event at {seq} cannot be read: {e}")))?;
        if line_seq != seq {
            return Err(broken(format!(
                "the event at {seq} names position {line_seq}"
            )));
        }
        out.push(Linked {
            seq,
            hash: stored,
            event,
        });
        *at = seq;
        *prev = stored;
    }
    Ok(())
}
