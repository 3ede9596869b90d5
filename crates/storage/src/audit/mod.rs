//! [`AuditStore`] for both backends: the block and head rows (`rows.rs`), appending and the
//! writer's appender (`append.rs`), retention (`prune.rs`), and moving the per-event rows of
//! the first audit release into blocks (`legacy.rs`).

#[macro_use]
mod head_sql;
mod append;
mod legacy;
mod prune;
mod rows;

use async_trait::async_trait;
use diesel::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use tessera_audit::{
    AuditAppender, AuditBlock, AuditStore, BlockSpan, ChainAppend, ChainHead, EncodedEvents,
};
use tessera_domain::{audit::AuditEvent, store::StoreError, TenantId};
use time::OffsetDateTime;

use crate::{
    database::{with_conn, Database, DbResultExt},
    rows::to_db_time,
    scan::with_scan_conn,
    schema::{audit_blocks, audit_chains},
};
use rows::{chain_key, BlockRow, HeadRow};

#[async_trait]
impl AuditStore for Database {
    async fn append_audit_events(
        &self,
        events: &[AuditEvent],
    ) -> Result<Vec<ChainAppend>, StoreError> {
        append::append(self, EncodedEvents::of(events)).await
    }

    async fn audit_appender(&self) -> Result<Box<dyn AuditAppender>, StoreError> {
        Ok(Box::new(append::Appender::open(self).await?))
    }

    async fn audit_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
        let rows: Vec<HeadRow> = with_conn!(self, |conn| {
            audit_chains::table
                .order(audit_chains::tenant_id)
                .select(HeadRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(ChainHead::try_from).collect()
    }

    async fn audit_chain_head(
        &self,
        chain: Option<TenantId>,
    ) -> Result<Option<ChainHead>, StoreError> {
        let key = chain_key(chain);
        let rows: Vec<HeadRow> = with_conn!(self, |conn| {
            audit_chains::table
                .filter(audit_chains::tenant_id.eq(&key))
                .select(HeadRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().next().map(ChainHead::try_from).transpose()
    }

    async fn audit_blocks(
        &self,
        chain: Option<TenantId>,
        after_first_seq: i64,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        let key = chain_key(chain);
        let rows: Vec<BlockRow> = with_scan_conn!(self, |conn| {
            audit_blocks::table
                .filter(audit_blocks::tenant_id.eq(&key))
                .filter(audit_blocks::first_seq.gt(after_first_seq))
                .order(audit_blocks::first_seq)
                .limit(i64::from(limit))
                .select(BlockRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(AuditBlock::try_from).collect()
    }

    async fn audit_blocks_after_seq(
        &self,
        chain: Option<TenantId>,
        seq: i64,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        let key = chain_key(chain);
        // A block holds at most MAX_BLOCK_EVENTS events, so one holding `seq + 1` starts
        // after `seq - MAX_BLOCK_EVENTS`: the range stays on the chain's key.
        let floor = seq.saturating_sub(tessera_audit::MAX_BLOCK_EVENTS as i64);
        let rows: Vec<BlockRow> = with_scan_conn!(self, |conn| {
            audit_blocks::table
                .filter(audit_blocks::tenant_id.eq(&key))
                .filter(audit_blocks::first_seq.gt(floor))
                .filter(audit_blocks::last_seq.gt(seq))
                .order(audit_blocks::first_seq)
                .limit(i64::from(limit))
                .select(BlockRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(AuditBlock::try_from).collect()
    }

    async fn audit_blocks_desc(
        &self,
        chain: Option<TenantId>,
        span: &BlockSpan,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        let key = chain_key(chain);
        let from = span.from.map(to_db_time);
        let to = span.to.map(to_db_time);
        let rows: Vec<BlockRow> = with_scan_conn!(self, |conn| {
            let mut q = audit_blocks::table
                .filter(audit_blocks::tenant_id.eq(&key))
                .filter(audit_blocks::first_seq.lt(span.below_first_seq))
                .filter(audit_blocks::first_seq.ge(span.min_first_seq))
                .into_boxed();
            if let Some(from) = from {
                q = q.filter(audit_blocks::latest_at.ge(from));
            }
            if let Some(to) = to {
                q = q.filter(audit_blocks::earliest_at.lt(to));
            }
            q.order(audit_blocks::first_seq.desc())
                .limit(i64::from(limit))
                .select(BlockRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(AuditBlock::try_from).collect()
    }

    async fn prune_audit_events(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        prune::prune(self, before).await
    }
}
