//! The rows of the trail: blocks and chain heads, and their conversions.

use diesel::{Insertable, Queryable, Selectable};
use tessera_audit::{codec, AuditBlock, ChainHead};
use tessera_domain::{store::StoreError, TenantId};
use time::PrimitiveDateTime;
use uuid::Uuid;

use crate::{
    rows::to_db_time,
    schema::{audit_blocks, audit_chains},
};

/// The chain key of refusals that name no tenant.
const NO_TENANT: &str = "00000000-0000-0000-0000-000000000000";

/// The `tenant_id` column of a chain's rows.
pub(super) fn chain_key(tenant: Option<TenantId>) -> String {
    tenant.map_or_else(|| NO_TENANT.to_string(), |t| t.to_string())
}

/// The chain a `tenant_id` column names.
pub(super) fn chain_tenant(key: &str) -> Result<Option<TenantId>, StoreError> {
    if key == NO_TENANT {
        return Ok(None);
    }
    key.parse()
        .map(Some)
        .map_err(|_| StoreError::Corrupt(format!("invalid audit tenant `{key}`")))
}

pub(super) fn hash32(what: &str, raw: &[u8]) -> Result<[u8; 32], StoreError> {
    raw.try_into()
        .map_err(|_| StoreError::Corrupt(format!("audit {what} is not 32 bytes")))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_blocks)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(super) struct BlockRow {
    pub(super) tenant_id: String,
    pub(super) first_seq: i64,
    pub(super) last_seq: i64,
    pub(super) earliest_at: PrimitiveDateTime,
    pub(super) latest_at: PrimitiveDateTime,
    pub(super) prev_hash: Vec<u8>,
    pub(super) hashes: Vec<u8>,
    pub(super) events: Vec<u8>,
    pub(super) encoding: i16,
}

impl From<&AuditBlock> for BlockRow {
    /// The row to store: the lines compressed ([`tessera_audit::codec`]).
    fn from(b: &AuditBlock) -> Self {
        let (encoding, events) = codec::compress(&b.lines);
        Self {
            tenant_id: chain_key(b.tenant_id),
            first_seq: b.first_seq,
            last_seq: b.last_seq,
            earliest_at: to_db_time(b.earliest_at),
            latest_at: to_db_time(b.latest_at),
            prev_hash: b.prev_hash.to_vec(),
            hashes: b.hashes.clone(),
            events,
            encoding,
        }
    }
}

impl TryFrom<BlockRow> for AuditBlock {
    type Error = StoreError;

    /// Only the columns' types and the encoding are checked here: what the block says is for
    /// [`tessera_audit::ChainCheck`] to judge.
    fn try_from(r: BlockRow) -> Result<Self, StoreError> {
        // A block that does not decompress is handed on as unreadable: verification names
        // it, where an error here would stop the walk without saying where.
        let (lines, unreadable) = match codec::decompress(r.encoding, r.events) {
            Ok(lines) => (lines, None),
            Err(e) => (Vec::new(), Some(e.0)),
        };
        Ok(AuditBlock {
            tenant_id: chain_tenant(&r.tenant_id)?,
            first_seq: r.first_seq,
            last_seq: r.last_seq,
            earliest_at: r.earliest_at.assume_utc(),
            latest_at: r.latest_at.assume_utc(),
            prev_hash: hash32("prev_hash", &r.prev_hash)?,
            hashes: r.hashes,
            lines,
            unreadable,
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = audit_chains)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(super) struct HeadRow {
    tenant_id: String,
    last_seq: i64,
    last_hash: Vec<u8>,
    last_event_id: Option<String>,
    pruned_seq: i64,
    pruned_hash: Vec<u8>,
}

impl TryFrom<HeadRow> for ChainHead {
    type Error = StoreError;

    fn try_from(r: HeadRow) -> Result<Self, StoreError> {
        Ok(ChainHead {
            tenant_id: chain_tenant(&r.tenant_id)?,
            last_seq: r.last_seq,
            last_hash: hash32("head hash", &r.last_hash)?,
            last_event_id: r
                .last_event_id
                .as_deref()
                .map(|id| {
                    id.parse::<Uuid>().map_err(|_| {
                        StoreError::Corrupt(format!("invalid audit head event `{id}`"))
                    })
                })
                .transpose()?,
            pruned_seq: r.pruned_seq,
            pruned_hash: hash32("pruned hash", &r.pruned_hash)?,
        })
    }
}

/// A head row that does not convert (corrupt) aborts the transaction it was read in.
pub(super) fn head(row: HeadRow) -> Result<ChainHead, diesel::result::Error> {
    ChainHead::try_from(row).map_err(|e| diesel::result::Error::DeserializationError(Box::new(e)))
}
