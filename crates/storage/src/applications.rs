//! [`ApplicationStore`] for both backends.

use async_trait::async_trait;
use diesel::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    application::Application,
    store::{ApplicationStore, StoreError, StoredApplication},
    ApiKeyHash, ApplicationId, Page, PageRequest, TenantId,
};
use time::OffsetDateTime;

use crate::{
    database::{page_of, read_unique_row, window, with_conn, Database, DbResultExt},
    rows::{application_grants, to_db_time, ApplicationRow},
    schema::applications::{self, dsl},
};

#[async_trait]
impl ApplicationStore for Database {
    async fn insert_application(&self, app: &StoredApplication) -> Result<(), StoreError> {
        let row = ApplicationRow::from(app);
        with_conn!(self, |conn| {
            diesel::insert_into(applications::table)
                .values(&row)
                .execute(conn)
                .await
                .db()
                .map(|_| ())
        })
    }

    async fn get_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<Option<Application>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let row = read_unique_row!(
            self,
            applications::table
                .filter(dsl::tenant_id.eq(&tenant))
                .filter(dsl::id.eq(&id)),
            ApplicationRow
        )?;
        row.map(ApplicationRow::into_application).transpose()
    }

    async fn find_application_by_key_hash(
        &self,
        hash: &ApiKeyHash,
    ) -> Result<Option<StoredApplication>, StoreError> {
        let hash = hash.as_bytes().to_vec();
        let row = read_unique_row!(
            self,
            applications::table.filter(dsl::key_hash.eq(&hash)),
            ApplicationRow
        )?;
        row.map(ApplicationRow::into_stored).transpose()
    }

    async fn list_applications(
        &self,
        tenant: TenantId,
        page: PageRequest,
    ) -> Result<Page<Application>, StoreError> {
        let tenant = tenant.to_string();
        let (limit, offset) = window(page);
        let (total, rows) = with_conn!(self, |conn| {
            let total: i64 = applications::table
                .filter(dsl::tenant_id.eq(&tenant))
                .count()
                .get_result(conn)
                .await
                .db()?;
            let rows: Vec<ApplicationRow> = applications::table
                .filter(dsl::tenant_id.eq(&tenant))
                .order((dsl::created_at.asc(), dsl::id.asc()))
                .limit(limit)
                .offset(offset)
                .select(ApplicationRow::as_select())
                .load(conn)
                .await
                .db()?;
            Ok::<_, StoreError>((total, rows))
        })?;
        page_of(rows, total, page, ApplicationRow::into_application)
    }

    async fn update_application(&self, app: &Application) -> Result<bool, StoreError> {
        let (tenant, id) = (app.tenant_id.to_string(), app.id.to_string());
        let (permissions, rules) = application_grants(app);
        let modified_by = app.modified_by.to_string();
        let modified_at = to_db_time(app.modified_at);
        let updated = with_conn!(self, |conn| {
            diesel::update(
                applications::table
                    .filter(dsl::tenant_id.eq(&tenant))
                    .filter(dsl::id.eq(&id)),
            )
            .set((
                dsl::name.eq(&app.name),
                dsl::app_type.eq(app.app_type.as_str()),
                dsl::permissions.eq(&permissions),
                dsl::rules.eq(&rules),
                dsl::modified_by.eq(&modified_by),
                dsl::modified_at.eq(modified_at),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }

    async fn replace_application_key(
        &self,
        tenant: TenantId,
        id: ApplicationId,
        hash: &ApiKeyHash,
        modified_by: ApplicationId,
        modified_at: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let hash = hash.as_bytes().to_vec();
        let modified_by = modified_by.to_string();
        let modified_at = to_db_time(modified_at);
        let updated = with_conn!(self, |conn| {
            diesel::update(
                applications::table
                    .filter(dsl::tenant_id.eq(&tenant))
                    .filter(dsl::id.eq(&id)),
            )
            .set((
                dsl::key_hash.eq(&hash),
                dsl::modified_by.eq(&modified_by),
                dsl::modified_at.eq(modified_at),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }

    async fn delete_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let deleted = with_conn!(self, |conn| {
            diesel::delete(
                applications::table
                    .filter(dsl::tenant_id.eq(&tenant))
                    .filter(dsl::id.eq(&id)),
            )
            .execute(conn)
            .await
            .db()
        })?;
        Ok(deleted == 1)
    }
}
