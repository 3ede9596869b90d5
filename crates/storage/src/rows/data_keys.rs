//! The rows of data-key versions and of the re-encryption job.

use diesel::prelude::{Insertable, Queryable, Selectable};
use tessera_domain::store::{DataKeyJob, SealedTable, StoreError, StoredKeyVersion};
use time::PrimitiveDateTime;

use crate::schema::{data_key_jobs, tenant_data_keys};

use super::{from_db_time, parse, to_db_time};

/// A later version of a tenant's data key.
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = tenant_data_keys)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct DataKeyVersionRow {
    pub tenant_id: String,
    pub version: i32,
    pub wrapped_key: Vec<u8>,
    pub created_at: PrimitiveDateTime,
}

impl DataKeyVersionRow {
    /// The row of `version` of `tenant`'s key, created now.
    pub(crate) fn new(tenant: tessera_domain::TenantId, version: &StoredKeyVersion) -> Self {
        Self {
            tenant_id: tenant.to_string(),
            version: i32::try_from(version.version).unwrap_or(i32::MAX),
            wrapped_key: version.wrapped.clone(),
            created_at: to_db_time(tessera_domain::timestamp::now()),
        }
    }
}

impl TryFrom<DataKeyVersionRow> for StoredKeyVersion {
    type Error = StoreError;

    fn try_from(r: DataKeyVersionRow) -> Result<Self, StoreError> {
        Ok(StoredKeyVersion {
            version: u32::try_from(r.version)
                .map_err(|_| StoreError::Corrupt(format!("key version {}", r.version)))?,
            wrapped: r.wrapped_key,
        })
    }
}

/// The re-encryption job of one tenant.
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = data_key_jobs)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct DataKeyJobRow {
    pub tenant_id: String,
    pub target_version: i32,
    pub stage: String,
    pub cursor: String,
    pub rows_done: i64,
    pub started_at: PrimitiveDateTime,
    pub updated_at: PrimitiveDateTime,
    pub finished_at: Option<PrimitiveDateTime>,
    pub lease_owner: Option<String>,
    pub lease_until: Option<PrimitiveDateTime>,
}

impl From<&DataKeyJob> for DataKeyJobRow {
    fn from(j: &DataKeyJob) -> Self {
        Self {
            tenant_id: j.tenant_id.to_string(),
            target_version: i32::try_from(j.target_version).unwrap_or(i32::MAX),
            stage: j.stage.map_or("done", SealedTable::as_str).to_string(),
            cursor: j.cursor.clone(),
            rows_done: i64::try_from(j.rows_done).unwrap_or(i64::MAX),
            started_at: to_db_time(j.started_at),
            updated_at: to_db_time(j.updated_at),
            finished_at: j.finished_at.map(to_db_time),
            lease_owner: None,
            lease_until: None,
        }
    }
}

impl TryFrom<DataKeyJobRow> for DataKeyJob {
    type Error = StoreError;

    fn try_from(r: DataKeyJobRow) -> Result<Self, StoreError> {
        Ok(DataKeyJob {
            tenant_id: parse("tenant id", &r.tenant_id)?,
            target_version: u32::try_from(r.target_version)
                .map_err(|_| StoreError::Corrupt(format!("key version {}", r.target_version)))?,
            stage: SealedTable::parse(&r.stage)
                .ok_or_else(|| StoreError::Corrupt(format!("job stage `{}`", r.stage)))?,
            cursor: r.cursor,
            rows_done: u64::try_from(r.rows_done).unwrap_or_default(),
            started_at: from_db_time(r.started_at),
            updated_at: from_db_time(r.updated_at),
            finished_at: r.finished_at.map(from_db_time),
        })
    }
}
