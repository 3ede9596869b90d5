//! [`TenantStore`] for both backends.

use async_trait::async_trait;
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, SelectableHelper};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    store::{StoreError, StoredApplication, StoredTenant, TenantStore},
    TenantId,
};

use crate::{
    database::{
        only_row, read_unique_row, with_conn, with_read_conn, with_write_conn, Database,
        DbResultExt,
    },
    rows::{ApplicationKeyRow, ApplicationRow, TenantRow},
    schema::{application_keys, applications, tenant_data_keys, tenants, tokens, vault_keys},
};

/// Tokens deleted per statement when a tenant is deleted.
const TOKENS_PER_DELETE: i64 = 5_000;

#[async_trait]
impl TenantStore for Database {
    async fn insert_tenant_with_admin(
        &self,
        tenant: &StoredTenant,
        admin: &StoredApplication,
    ) -> Result<(), StoreError> {
        let tenant_row = TenantRow::from(tenant);
        let admin_row = ApplicationRow::from(&admin.application);
        let key_row = admin.key.as_ref().map(ApplicationKeyRow::from);
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::insert_into(tenants::table)
                    .values(&tenant_row)
                    .execute(conn)
                    .await?;
                diesel::insert_into(applications::table)
                    .values(&admin_row)
                    .execute(conn)
                    .await?;
                if let Some(key_row) = &key_row {
                    diesel::insert_into(application_keys::table)
                        .values(key_row)
                        .execute(conn)
                        .await?;
                }
                Ok(())
            })
            .await
            .db()
        })
    }

    async fn get_tenant(&self, id: TenantId) -> Result<Option<StoredTenant>, StoreError> {
        let id = id.to_string();
        let row = read_unique_row!(
            self,
            tenants::table.filter(tenants::tenant_id.eq(&id)),
            TenantRow
        )?;
        row.map(StoredTenant::try_from).transpose()
    }

    async fn first_tenant(&self) -> Result<Option<StoredTenant>, StoreError> {
        let row = with_conn!(self, |conn| {
            tenants::table
                .order((tenants::created_at.asc(), tenants::tenant_id.asc()))
                .select(TenantRow::as_select())
                .first(conn)
                .await
                .optional()
                .db()
        })?;
        row.map(StoredTenant::try_from).transpose()
    }

    async fn list_tenants(&self) -> Result<Vec<StoredTenant>, StoreError> {
        let rows = with_conn!(self, |conn| {
            tenants::table
                .order((tenants::created_at.asc(), tenants::tenant_id.asc()))
                .select(TenantRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(StoredTenant::try_from).collect()
    }

    async fn replace_wrapped_data_key(
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
                    .filter(tenants::wrapped_data_key.eq(expected)),
            )
            .set(tenants::wrapped_data_key.eq(new))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }

    async fn destroy_tenant_keys(&self, tenant: TenantId) -> Result<bool, StoreError> {
        let id = tenant.to_string();
        let updated = with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::delete(tenant_data_keys::table.filter(tenant_data_keys::tenant_id.eq(&id)))
                    .execute(conn)
                    .await?;
                diesel::update(tenants::table.filter(tenants::tenant_id.eq(&id)))
                    .set((
                        tenants::wrapped_data_key.eq(Vec::<u8>::new()),
                        tenants::wrapped_index_keys.eq(None::<Vec<u8>>),
                    ))
                    .execute(conn)
                    .await
            })
            .await
            .db()
        })?;
        if updated == 1
            && crate::purge::purge_freed_space(self, &["tenants", "tenant_data_keys"]).await?
                == crate::purge::Purged::SnapshotsRemained
        {
            return Err(StoreError::Unavailable(
                "the destroyed keys may survive in old row versions that other sessions' snapshots still see: run again once they end (see pg_stat_activity)".into(),
            ));
        }
        Ok(updated == 1)
    }

    async fn delete_tenant(&self, tenant: TenantId) -> Result<bool, StoreError> {
        let id = tenant.to_string();
        // Tokens first, a batch at a time, so no one statement holds the tenant's every row.
        loop {
            let batch: Vec<String> = with_conn!(self, |conn| {
                tokens::table
                    .filter(tokens::tenant_id.eq(&id))
                    .select(tokens::id)
                    .limit(TOKENS_PER_DELETE)
                    .load(conn)
                    .await
                    .db()
            })?;
            let deleted = with_write_conn!(self, |conn| {
                diesel::delete(
                    tokens::table
                        .filter(tokens::tenant_id.eq(&id))
                        .filter(tokens::id.eq_any(&batch)),
                )
                .execute(conn)
                .await
                .db()
            })?;
            if batch.len() < TOKENS_PER_DELETE as usize || deleted == 0 {
                break;
            }
        }
        // The rest goes with the tenant's row (ON DELETE CASCADE).
        let deleted = with_write_conn!(self, |conn| {
            diesel::delete(tenants::table.filter(tenants::tenant_id.eq(&id)))
                .execute(conn)
                .await
                .db()
        })?;
        Ok(deleted == 1)
    }

    async fn get_vault_key(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        with_read_conn!(self, |conn| {
            vault_keys::table
                .filter(vault_keys::name.eq(name))
                .select(vault_keys::wrapped_key)
                .load(conn)
                .await
                .db()
                .map(only_row)
        })
    }

    async fn insert_vault_key(&self, name: &str, wrapped: &[u8]) -> Result<(), StoreError> {
        with_write_conn!(self, |conn| {
            diesel::insert_into(vault_keys::table)
                .values((
                    vault_keys::name.eq(name),
                    vault_keys::wrapped_key.eq(wrapped),
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await
                .db()
                .map(|_| ())
        })
    }

    async fn replace_vault_key(
        &self,
        name: &str,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        let updated = with_write_conn!(self, |conn| {
            diesel::update(
                vault_keys::table
                    .filter(vault_keys::name.eq(name))
                    .filter(vault_keys::wrapped_key.eq(expected)),
            )
            .set(vault_keys::wrapped_key.eq(new))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }
}
