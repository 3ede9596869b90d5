//! [`DataKeyStore`] for both backends: data-key versions, the tenant's index keys, the
//! re-encryption job and its lease (docs/operations.md, "Rotating data keys"). The rows the
//! job reads and rewrites are in [`sealed`].

mod sealed;

use async_trait::async_trait;
use diesel::{
    BoolExpressionMethods, ExpressionMethods, OptionalExtension, QueryDsl, SelectableHelper,
};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    store::{
        DataKeyJob, DataKeyStore, SealedRow, SealedTable, StoreError, StoredKeyVersion,
        RETIRED_FIRST_KEY,
    },
    TenantId,
};
use time::OffsetDateTime;

use crate::{
    database::{with_conn, with_write_conn, Database, DbResultExt},
    purge::{purge_freed_space, Purged},
    rows::{to_db_time, DataKeyJobRow, DataKeyVersionRow},
    schema::{data_key_jobs, tenant_data_keys, tenants},
};

fn version_column(version: u32) -> i32 {
    i32::try_from(version).unwrap_or(i32::MAX)
}

#[async_trait]
impl DataKeyStore for Database {
    async fn data_key_versions(
        &self,
        tenant: TenantId,
    ) -> Result<Vec<StoredKeyVersion>, StoreError> {
        let id = tenant.to_string();
        let rows = with_conn!(self, |conn| {
            tenant_data_keys::table
                .filter(tenant_data_keys::tenant_id.eq(&id))
                .order(tenant_data_keys::version.asc())
                .select(DataKeyVersionRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(StoredKeyVersion::try_from).collect()
    }

    async fn add_data_key_version(
        &self,
        version: &StoredKeyVersion,
        index_keys: &Option<Vec<u8>>,
        job: &DataKeyJob,
    ) -> Result<bool, StoreError> {
        let id = job.tenant_id.to_string();
        let version_row = DataKeyVersionRow::new(job.tenant_id, version);
        let job_row = DataKeyJobRow::from(job);
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                // A write first: SQLite then takes its write lock at once (waiting its busy
                // time for another process's writes), instead of failing to upgrade a read
                // transaction that another process wrote under ("database is locked").
                // It also finds the tenant's keys not destroyed (being deleted).
                let live = diesel::update(
                    tenants::table
                        .filter(tenants::tenant_id.eq(&id))
                        .filter(tenants::wrapped_data_key.ne(Vec::<u8>::new())),
                )
                .set(tenants::tenant_id.eq(tenants::tenant_id))
                .execute(conn)
                .await?;
                if live == 0 {
                    return Ok(false);
                }
                let unfinished: Option<Option<time::PrimitiveDateTime>> = data_key_jobs::table
                    .filter(data_key_jobs::tenant_id.eq(&id))
                    .select(data_key_jobs::finished_at)
                    .first(conn)
                    .await
                    .optional()?;
                let taken: i64 = tenant_data_keys::table
                    .filter(tenant_data_keys::tenant_id.eq(&id))
                    .filter(tenant_data_keys::version.eq(version_row.version))
                    .count()
                    .get_result(conn)
                    .await?;
                if matches!(unfinished, Some(None)) || taken > 0 {
                    return Ok(false);
                }
                diesel::insert_into(tenant_data_keys::table)
                    .values(&version_row)
                    .execute(conn)
                    .await?;
                if let Some(index_keys) = index_keys {
                    diesel::update(
                        tenants::table
                            .filter(tenants::tenant_id.eq(&id))
                            .filter(tenants::wrapped_index_keys.is_null()),
                    )
                    .set(tenants::wrapped_index_keys.eq(index_keys))
                    .execute(conn)
                    .await?;
                }
                diesel::delete(data_key_jobs::table.filter(data_key_jobs::tenant_id.eq(&id)))
                    .execute(conn)
                    .await?;
                diesel::insert_into(data_key_jobs::table)
                    .values(&job_row)
                    .execute(conn)
                    .await?;
                Ok(true)
            })
            .await
            .db()
        })
    }

    async fn replace_data_key_version(
        &self,
        tenant: TenantId,
        version: u32,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        let id = tenant.to_string();
        let updated = with_write_conn!(self, |conn| {
            diesel::update(
                tenant_data_keys::table
                    .filter(tenant_data_keys::tenant_id.eq(&id))
                    .filter(tenant_data_keys::version.eq(version_column(version)))
                    .filter(tenant_data_keys::wrapped_key.eq(expected)),
            )
            .set(tenant_data_keys::wrapped_key.eq(new))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }

    async fn replace_index_keys(
        &self,
        tenant: TenantId,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        let id = tenant.to_string();
        let updated = with_write_conn!(self, |conn| {
            diesel::update(
                tenants::table
                    .filter(tenants::tenant_id.eq(&id))
                    .filter(tenants::wrapped_index_keys.eq(expected)),
            )
            .set(tenants::wrapped_index_keys.eq(new))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }

    async fn retire_data_key_version(
        &self,
        tenant: TenantId,
        version: u32,
    ) -> Result<bool, StoreError> {
        let id = tenant.to_string();
        let retired = with_write_conn!(self, |conn| {
            if version == 1 {
                diesel::update(
                    tenants::table
                        .filter(tenants::tenant_id.eq(&id))
                        .filter(tenants::wrapped_index_keys.is_not_null())
                        .filter(tenants::wrapped_data_key.ne(RETIRED_FIRST_KEY))
                        .filter(tenants::wrapped_data_key.ne(Vec::<u8>::new())),
                )
                .set(tenants::wrapped_data_key.eq(RETIRED_FIRST_KEY))
                .execute(conn)
                .await
                .db()
            } else {
                diesel::delete(
                    tenant_data_keys::table
                        .filter(tenant_data_keys::tenant_id.eq(&id))
                        .filter(tenant_data_keys::version.eq(version_column(version))),
                )
                .execute(conn)
                .await
                .db()
            }
        })?;
        // Purged even when retired already: an earlier run's purge may have been cut short.
        if purge_freed_space(self, &["tenants", "tenant_data_keys"]).await?
            == Purged::SnapshotsRemained
        {
            return Err(StoreError::Unavailable(
                "the retired key may survive in old row versions that other sessions' snapshots still see: run again once they end (see pg_stat_activity)".into(),
            ));
        }
        Ok(retired == 1)
    }

    async fn list_data_key_jobs(&self) -> Result<Vec<DataKeyJob>, StoreError> {
        let rows = with_conn!(self, |conn| {
            data_key_jobs::table
                .order(data_key_jobs::tenant_id.asc())
                .select(DataKeyJobRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(DataKeyJob::try_from).collect()
    }

    async fn data_key_job(&self, tenant: TenantId) -> Result<Option<DataKeyJob>, StoreError> {
        let id = tenant.to_string();
        let row = with_conn!(self, |conn| {
            data_key_jobs::table
                .filter(data_key_jobs::tenant_id.eq(&id))
                .select(DataKeyJobRow::as_select())
                .first(conn)
                .await
                .optional()
                .db()
        })?;
        row.map(DataKeyJob::try_from).transpose()
    }

    async fn claim_data_key_job(
        &self,
        tenant: TenantId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let (id, now, until) = (tenant.to_string(), to_db_time(now), to_db_time(until));
        let claimed = with_write_conn!(self, |conn| {
            diesel::update(
                data_key_jobs::table
                    .filter(data_key_jobs::tenant_id.eq(&id))
                    .filter(data_key_jobs::finished_at.is_null())
                    .filter(
                        data_key_jobs::lease_owner
                            .is_null()
                            .or(data_key_jobs::lease_until.lt(now))
                            .or(data_key_jobs::lease_owner.eq(owner)),
                    ),
            )
            .set((
                data_key_jobs::lease_owner.eq(owner),
                data_key_jobs::lease_until.eq(until),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(claimed == 1)
    }

    async fn save_data_key_job(
        &self,
        job: &DataKeyJob,
        owner: &str,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let row = DataKeyJobRow::from(job);
        let until = to_db_time(until);
        let saved = with_write_conn!(self, |conn| {
            diesel::update(
                data_key_jobs::table
                    .filter(data_key_jobs::tenant_id.eq(&row.tenant_id))
                    .filter(data_key_jobs::lease_owner.eq(owner)),
            )
            .set((
                data_key_jobs::stage.eq(&row.stage),
                data_key_jobs::cursor.eq(&row.cursor),
                data_key_jobs::rows_done.eq(row.rows_done),
                data_key_jobs::updated_at.eq(row.updated_at),
                data_key_jobs::finished_at.eq(row.finished_at),
                data_key_jobs::lease_until.eq(until),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(saved == 1)
    }

    async fn sealed_rows(
        &self,
        tenant: TenantId,
        table: SealedTable,
        after: &str,
        limit: u32,
    ) -> Result<Vec<SealedRow>, StoreError> {
        sealed::rows(self, tenant, table, after, limit).await
    }

    async fn replace_sealed(
        &self,
        tenant: TenantId,
        table: SealedTable,
        row: &SealedRow,
        values: &[Option<Vec<u8>>],
    ) -> Result<bool, StoreError> {
        sealed::replace(self, tenant, table, row, values).await
    }
}
