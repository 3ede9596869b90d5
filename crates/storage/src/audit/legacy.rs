//! Moving the per-event rows of the first audit release (migration 000006's `audit_events`)
//! into blocks, once, when a release with blocks first starts.
//!
//! Each chain's rows move in position order, [`MOVE_STEP`] per block, under the chain's head
//! lock, and are deleted in the same transaction: an interrupted move resumes where it
//! stopped, and several processes starting at once take turns. A block's lines are built from
//! the rows' stored text as it is (see [`tessera_audit::encode_legacy`]), so a row
//! edited before the move still fails verification afterwards; the hashes are the stored ones.

use diesel::{ExpressionMethods, QueryDsl, Queryable, Selectable, SelectableHelper};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_audit::{encode_legacy, AuditBlock, LegacyColumns};
use tessera_domain::store::StoreError;
use time::PrimitiveDateTime;

use super::rows::{chain_tenant, hash32, BlockRow};
use crate::{
    database::{with_write_conn, Database, DbResultExt},
    schema::{audit_blocks, audit_events},
};

/// Rows moved per block (and per transaction).
const MOVE_STEP: i64 = 1000;

#[derive(Queryable, Selectable)]
#[diesel(table_name = audit_events)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
struct LegacyRow {
    tenant_id: String,
    seq: i64,
    event_id: String,
    occurred_at: PrimitiveDateTime,
    action: String,
    outcome: String,
    actor: String,
    resource_ids: String,
    proxy_id: Option<String>,
    request_id: Option<String>,
    reason: Option<String>,
    prev_hash: Vec<u8>,
    hash: Vec<u8>,
}

/// The block holding `rows` (one chain's, in position order, at least one).
fn block_of(rows: &[LegacyRow]) -> Result<AuditBlock, StoreError> {
    let corrupt = |e: String| StoreError::Corrupt(format!("legacy audit row: {e}"));
    let first = <[_]>::first(rows).ok_or_else(|| corrupt("no rows".into()))?;
    let tenant = chain_tenant(&first.tenant_id)?;
    let tenant_text = tenant.map(|_| first.tenant_id.as_str());
    let mut lines = Vec::with_capacity(rows.len() * 360);
    let mut hashes = Vec::with_capacity(rows.len() * 32);
    for row in rows {
        let resource_ids: Vec<String> =
            serde_json::from_str(&row.resource_ids).map_err(|e| corrupt(e.to_string()))?;
        lines.extend_from_slice(&encode_legacy(&LegacyColumns {
            action: &row.action,
            actor: &row.actor,
            id: &row.event_id,
            occurred_at: row.occurred_at.assume_utc(),
            outcome: &row.outcome,
            proxy_id: row.proxy_id.as_deref(),
            reason: row.reason.as_deref(),
            request_id: row.request_id.as_deref(),
            resource_ids: &resource_ids,
            seq: row.seq,
            tenant_id: tenant_text,
        }));
        lines.push(b'\n');
        hashes.extend_from_slice(&hash32("hash", &row.hash)?);
    }
    let times = rows.iter().map(|r| r.occurred_at.assume_utc());
    let earliest = times
        .clone()
        .min()
        .unwrap_or(first.occurred_at.assume_utc());
    let latest = times.max().unwrap_or(first.occurred_at.assume_utc());
    Ok(AuditBlock {
        tenant_id: tenant,
        first_seq: first.seq,
        last_seq: <[_]>::last(rows).map_or(first.seq, |r| r.seq),
        earliest_at: earliest,
        latest_at: latest,
        prev_hash: hash32("prev_hash", &first.prev_hash)?,
        hashes,
        lines,
        unreadable: None,
    })
}

impl Database {
    /// Moves every row of the first release's per-event table into blocks; returns how many
    /// events were moved (0 once done: one cheap probe).
    pub async fn move_legacy_audit_events(&self) -> Result<u64, StoreError> {
        let mut moved = 0;
        loop {
            let next: Vec<String> = with_write_conn!(self, |conn| {
                audit_events::table
                    .select(audit_events::tenant_id)
                    .limit(1)
                    .load(conn)
                    .await
                    .db()
            })?;
            let Some(key) = next.into_iter().next() else {
                return Ok(moved);
            };
            moved += self.move_step(&key).await?;
        }
    }

    /// Moves the first [`MOVE_STEP`] rows of chain `key` into one block.
    async fn move_step(&self, key: &str) -> Result<u64, StoreError> {
        let moved: usize = with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                lock_head!(key).execute(conn).await?;
                let rows: Vec<LegacyRow> = audit_events::table
                    .filter(audit_events::tenant_id.eq(key))
                    .order(audit_events::seq)
                    .limit(MOVE_STEP)
                    .select(LegacyRow::as_select())
                    .load(conn)
                    .await?;
                let (Some(first), Some(last)) = (
                    <[_]>::first(&rows).map(|r| r.seq),
                    <[_]>::last(&rows).map(|r| r.seq),
                ) else {
                    return Ok(0);
                };
                let block = block_of(&rows)
                    .map_err(|e| diesel::result::Error::DeserializationError(Box::new(e)))?;
                diesel::insert_into(audit_blocks::table)
                    .values(BlockRow::from(&block))
                    .execute(conn)
                    .await?;
                diesel::delete(
                    audit_events::table
                        .filter(audit_events::tenant_id.eq(key))
                        .filter(audit_events::seq.ge(first))
                        .filter(audit_events::seq.le(last)),
                )
                .execute(conn)
                .await?;
                Ok(rows.len())
            })
            .await
            .db()
        })?;
        Ok(moved as u64)
    }
}
