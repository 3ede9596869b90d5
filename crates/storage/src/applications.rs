//! [`ApplicationStore`] for both backends: applications, and their keys in `application_keys`.

use async_trait::async_trait;
use diesel::{BoolExpressionMethods, ExpressionMethods, JoinOnDsl, QueryDsl, SelectableHelper};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    application::{Application, ApplicationKey},
    store::{
        ApplicationFilter, ApplicationStore, KeyAdded, KeyedApplication, StoreError,
        StoredApplication, StoredApplicationKey,
    },
    ApiKeyHash, ApplicationId, ApplicationKeyId, Page, PageRequest, TenantId,
};
use time::OffsetDateTime;

use crate::{
    database::{
        only_row, page_of, read_unique_row, window, with_conn, with_read_conn, with_write_conn,
        Database, DbResultExt,
    },
    rows::{application_grants, to_db_time, to_json, ApplicationKeyRow, ApplicationRow},
    schema::{
        application_keys::{self, dsl as keys},
        applications::{self, dsl},
    },
};

/// One tenant's applications with the list filters applied (a macro: the boxed query's type
/// depends on the backend of each expansion).
macro_rules! filtered_applications {
    ($tenant:expr, $ids:expr, $types:expr) => {{
        let mut q = applications::table
            .filter(dsl::tenant_id.eq($tenant))
            .into_boxed();
        if !$ids.is_empty() {
            q = q.filter(dsl::id.eq_any($ids));
        }
        if !$types.is_empty() {
            q = q.filter(dsl::app_type.eq_any($types));
        }
        q
    }};
}

#[async_trait]
impl ApplicationStore for Database {
    async fn insert_application(&self, app: &StoredApplication) -> Result<(), StoreError> {
        let row = ApplicationRow::from(&app.application);
        let key = app.key.as_ref().map(ApplicationKeyRow::from);
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::insert_into(applications::table)
                    .values(&row)
                    .execute(conn)
                    .await?;
                if let Some(key) = &key {
                    diesel::insert_into(application_keys::table)
                        .values(key)
                        .execute(conn)
                        .await?;
                }
                Ok(())
            })
            .await
            .db()
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
    ) -> Result<Option<KeyedApplication>, StoreError> {
        let hash = hash.as_bytes().as_slice();
        let row = with_read_conn!(self, |conn| {
            application_keys::table
                .inner_join(
                    applications::table.on(dsl::tenant_id
                        .eq(keys::tenant_id)
                        .and(dsl::id.eq(keys::application_id))),
                )
                .filter(keys::key_hash.eq(hash))
                .select((ApplicationRow::as_select(), ApplicationKeyRow::as_select()))
                .load::<(ApplicationRow, ApplicationKeyRow)>(conn)
                .await
                .db()
                .map(only_row)
        })?;
        row.map(|(app, key)| app.into_keyed(key)).transpose()
    }

    async fn list_applications(
        &self,
        tenant: TenantId,
        filter: &ApplicationFilter,
        page: PageRequest,
    ) -> Result<Page<Application>, StoreError> {
        let tenant = tenant.to_string();
        let ids: Vec<String> = filter.ids.iter().map(ToString::to_string).collect();
        let types: Vec<&str> = filter.types.iter().map(|t| t.as_str()).collect();
        let (limit, offset) = window(page);
        let (total, rows) = with_conn!(self, |conn| {
            let total: i64 = filtered_applications!(&tenant, &ids, &types)
                .count()
                .get_result(conn)
                .await
                .db()?;
            let rows: Vec<ApplicationRow> = filtered_applications!(&tenant, &ids, &types)
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
        let origins = to_json(&app.allowed_origins);
        let updated = with_write_conn!(self, |conn| {
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
                dsl::allowed_origins.eq(&origins),
                dsl::modified_by.eq(&modified_by),
                dsl::modified_at.eq(modified_at),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }

    async fn replace_application_keys(
        &self,
        key: &StoredApplicationKey,
        modified_by: ApplicationId,
        modified_at: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let row = ApplicationKeyRow::from(key);
        let modified_by = modified_by.to_string();
        let modified_at = to_db_time(modified_at);
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                let updated = diesel::update(
                    applications::table
                        .filter(dsl::tenant_id.eq(&row.tenant_id))
                        .filter(dsl::id.eq(&row.application_id)),
                )
                .set((
                    dsl::modified_by.eq(&modified_by),
                    dsl::modified_at.eq(modified_at),
                ))
                .execute(conn)
                .await?;
                if updated != 1 {
                    return Ok(false);
                }
                diesel::delete(
                    application_keys::table
                        .filter(keys::tenant_id.eq(&row.tenant_id))
                        .filter(keys::application_id.eq(&row.application_id)),
                )
                .execute(conn)
                .await?;
                diesel::insert_into(application_keys::table)
                    .values(&row)
                    .execute(conn)
                    .await?;
                Ok(true)
            })
            .await
            .db()
        })
    }

    async fn delete_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        // Its keys go with it (the foreign key cascades).
        let deleted = with_write_conn!(self, |conn| {
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

    async fn insert_application_key(
        &self,
        key: &StoredApplicationKey,
        max: usize,
    ) -> Result<KeyAdded, StoreError> {
        let row = ApplicationKeyRow::from(key);
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                // A write to the application's row first: it holds the row's lock until the
                // commit (PostgreSQL) or takes the database's write lock (SQLite), so no other
                // addition counts the keys between this count and this insert.
                let locked = diesel::update(
                    applications::table
                        .filter(dsl::tenant_id.eq(&row.tenant_id))
                        .filter(dsl::id.eq(&row.application_id)),
                )
                .set(dsl::id.eq(dsl::id))
                .execute(conn)
                .await?;
                if locked != 1 {
                    return Ok(KeyAdded::NoApplication);
                }
                let held: i64 = application_keys::table
                    .filter(keys::tenant_id.eq(&row.tenant_id))
                    .filter(keys::application_id.eq(&row.application_id))
                    .count()
                    .get_result(conn)
                    .await?;
                if held >= max {
                    return Ok(KeyAdded::Full);
                }
                diesel::insert_into(application_keys::table)
                    .values(&row)
                    .execute(conn)
                    .await?;
                Ok(KeyAdded::Added)
            })
            .await
            .db()
        })
    }

    async fn list_application_keys(
        &self,
        tenant: TenantId,
        apps: &[ApplicationId],
    ) -> Result<Vec<ApplicationKey>, StoreError> {
        let tenant = tenant.to_string();
        let apps: Vec<String> = apps.iter().map(ToString::to_string).collect();
        let rows: Vec<ApplicationKeyRow> = with_conn!(self, |conn| {
            application_keys::table
                .filter(keys::tenant_id.eq(&tenant))
                .filter(keys::application_id.eq_any(&apps))
                .order((keys::created_at.asc(), keys::id.asc()))
                .select(ApplicationKeyRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(ApplicationKeyRow::into_key).collect()
    }

    async fn delete_application_key(
        &self,
        tenant: TenantId,
        app: ApplicationId,
        id: ApplicationKeyId,
    ) -> Result<bool, StoreError> {
        let (tenant, app, id) = (tenant.to_string(), app.to_string(), id.to_string());
        let deleted = with_write_conn!(self, |conn| {
            diesel::delete(
                application_keys::table
                    .filter(keys::tenant_id.eq(&tenant))
                    .filter(keys::application_id.eq(&app))
                    .filter(keys::id.eq(&id)),
            )
            .execute(conn)
            .await
            .db()
        })?;
        Ok(deleted == 1)
    }
}
