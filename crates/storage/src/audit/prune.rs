//! Retention: the oldest blocks of each chain whose events all occurred before the cut-off are
//! removed, and the removal is recorded — as an `audit.pruned` event appended to the chain
//! (naming the last removed position and its hash) and as the head's anchor. A prefix deleted
//! any other way is caught by verification, and a recorded one changes the head that
//! operators keep elsewhere.

use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_audit::ChainHead;
use tessera_domain::{audit::AuditEvent, store::StoreError};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::rows::{hash32, head, BlockRow};
use crate::{
    database::{with_conn, with_write_conn, Database, DbResultExt},
    rows::to_db_time,
    schema::audit_blocks,
};

/// Blocks examined per pruning step.
const PRUNE_STEP: i64 = 256;

/// [`tessera_audit::AuditStore::prune_audit_events`].
pub(super) async fn prune(db: &Database, before: OffsetDateTime) -> Result<u64, StoreError> {
    let before = to_db_time(before);
    let mut removed = 0;
    for chain in db.chains_with_blocks().await? {
        loop {
            let (pruned, more) = db.prune_chain_prefix(&chain, before).await?;
            removed += pruned;
            if !more {
                break;
            }
        }
    }
    Ok(removed)
}

/// What one step removes: the blocks from the oldest kept one through `through_first_seq`.
struct Cut {
    through_first_seq: i64,
    through_seq: i64,
    events: u64,
}

/// The leading run of `blocks` (oldest first, after `head`'s anchor) all of whose events are
/// older than `before`, if any; contiguous positions only.
fn leading_stale(
    head: &ChainHead,
    blocks: &[(i64, i64, PrimitiveDateTime)],
    before: PrimitiveDateTime,
) -> Option<Cut> {
    let mut next = head.pruned_seq + 1;
    let mut cut: Option<Cut> = None;
    for &(first, last, latest) in blocks {
        if first != next || latest >= before || last > head.last_seq {
            break;
        }
        let events =
            cut.as_ref().map_or(0, |c| c.events) + u64::try_from(last - first + 1).unwrap_or(0);
        cut = Some(Cut {
            through_first_seq: first,
            through_seq: last,
            events,
        });
        next = last + 1;
    }
    cut
}

impl Database {
    /// The chain keys that have blocks.
    async fn chains_with_blocks(&self) -> Result<Vec<String>, StoreError> {
        with_conn!(self, |conn| {
            audit_blocks::table
                .select(audit_blocks::tenant_id)
                .distinct()
                .load(conn)
                .await
                .db()
        })
    }

    /// Removes the leading run of chain `key`'s blocks older than `before` (examining at most
    /// [`PRUNE_STEP`] blocks) and records the removal. Returns how many events were removed
    /// and whether there may be more.
    async fn prune_chain_prefix(
        &self,
        key: &str,
        before: PrimitiveDateTime,
    ) -> Result<(u64, bool), StoreError> {
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                lock_head!(key).execute(conn).await?;
                let Some(row) = read_head!(key).get_result(conn).await.optional()? else {
                    return Ok((0, false));
                };
                let mut head = head(row)?;
                let blocks: Vec<(i64, i64, PrimitiveDateTime)> = audit_blocks::table
                    .filter(audit_blocks::tenant_id.eq(key))
                    .filter(audit_blocks::first_seq.gt(head.pruned_seq))
                    .order(audit_blocks::first_seq)
                    .limit(PRUNE_STEP)
                    .select((
                        audit_blocks::first_seq,
                        audit_blocks::last_seq,
                        audit_blocks::latest_at,
                    ))
                    .load(conn)
                    .await?;
                let Some(cut) = leading_stale(&head, &blocks, before) else {
                    return Ok((0, false));
                };
                let hashes: Vec<u8> = audit_blocks::table
                    .filter(audit_blocks::tenant_id.eq(key))
                    .filter(audit_blocks::first_seq.eq(cut.through_first_seq))
                    .select(audit_blocks::hashes)
                    .get_result(conn)
                    .await?;
                let last = hashes.rchunks_exact(32).next().unwrap_or_default();
                let last_hash = hash32("pruned hash", last)
                    .map_err(|e| diesel::result::Error::DeserializationError(Box::new(e)))?;
                diesel::delete(
                    audit_blocks::table
                        .filter(audit_blocks::tenant_id.eq(key))
                        .filter(audit_blocks::first_seq.gt(head.pruned_seq))
                        .filter(audit_blocks::first_seq.le(cut.through_first_seq)),
                )
                .execute(conn)
                .await?;
                let record =
                    AuditEvent::pruning(head.tenant_id, cut.through_seq, last_hash, cut.events);
                let (block, _) = tessera_audit::seal(&mut head, &[record]);
                diesel::insert_into(audit_blocks::table)
                    .values(BlockRow::from(&block))
                    .execute(conn)
                    .await?;
                head.pruned_seq = cut.through_seq;
                head.pruned_hash = last_hash;
                write_head!(key, head).execute(conn).await?;
                Ok((cut.events, blocks.len() as i64 == PRUNE_STEP))
            })
            .await
            .db()
        })
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn only_the_leading_contiguous_stale_run_is_cut() {
        let mut head = ChainHead::empty(None);
        head.last_seq = 10;
        let old = datetime!(2020-01-01 0:00);
        let new = datetime!(2030-01-01 0:00);
        let cutoff = datetime!(2025-01-01 0:00);
        let cut =
            leading_stale(&head, &[(1, 3, old), (4, 6, old), (7, 10, new)], cutoff).expect("cut");
        assert_eq!(
            (cut.through_first_seq, cut.through_seq, cut.events),
            (4, 6, 6)
        );
        assert!(leading_stale(&head, &[(1, 3, new), (4, 6, old)], cutoff).is_none());
        assert!(
            leading_stale(&head, &[(2, 3, old)], cutoff).is_none(),
            "a gap"
        );
        assert!(
            leading_stale(&head, &[(1, 12, old)], cutoff).is_none(),
            "past the head"
        );
    }
}
