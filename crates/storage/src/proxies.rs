//! [`ProxyStore`] for both backends.

use async_trait::async_trait;
use diesel::{
    EscapeExpressionMethods, ExpressionMethods, QueryDsl, SelectableHelper, TextExpressionMethods,
};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    proxy::name_search_key,
    store::{ProxyFilter, ProxyStore, SealedProxySecrets, StoreError, StoredProxy, UnsealedProxy},
    ApplicationId, Page, PageRequest, ProxyId, Secret, TenantId,
};

use crate::{
    database::{
        page_of, read_unique_row, window, with_conn, with_write_conn, Database, DbResultExt,
    },
    rows::{NewProxyRow, ProxyRow},
    schema::{
        proxies::{self, dsl},
        proxies_unsealed,
    },
};

/// One tenant's proxies with the list filters applied (a macro: the boxed query's type
/// depends on the backend of each expansion).
macro_rules! filtered_proxies {
    ($tenant:expr, $ids:expr, $name_like:expr) => {{
        let mut q = proxies::table
            .filter(dsl::tenant_id.eq($tenant))
            .into_boxed();
        if !$ids.is_empty() {
            q = q.filter(dsl::id.eq_any($ids));
        }
        if let Some(pattern) = $name_like {
            q = q.filter(dsl::name_search.like(pattern).escape('\\'));
        }
        q
    }};
}

#[async_trait]
impl ProxyStore for Database {
    async fn insert_proxy(&self, proxy: &StoredProxy) -> Result<(), StoreError> {
        let row = NewProxyRow::from(proxy);
        with_write_conn!(self, |conn| {
            diesel::insert_into(proxies::table)
                .values(&row)
                .execute(conn)
                .await
                .db()
                .map(|_| ())
        })
    }

    async fn get_proxy(
        &self,
        tenant: TenantId,
        id: ProxyId,
    ) -> Result<Option<StoredProxy>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let row = read_unique_row!(
            self,
            proxies::table
                .filter(dsl::tenant_id.eq(&tenant))
                .filter(dsl::id.eq(&id)),
            ProxyRow
        )?;
        row.map(StoredProxy::try_from).transpose()
    }

    async fn find_proxy_by_key(
        &self,
        key_lookup: &[u8; 32],
    ) -> Result<Option<StoredProxy>, StoreError> {
        let lookup = key_lookup.as_slice();
        let row = read_unique_row!(
            self,
            proxies::table.filter(dsl::key_lookup.eq(lookup)),
            ProxyRow
        )?;
        row.map(StoredProxy::try_from).transpose()
    }

    async fn list_proxies(
        &self,
        tenant: TenantId,
        filter: &ProxyFilter,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, StoreError> {
        let tenant = tenant.to_string();
        let ids: Vec<String> = filter.ids.iter().map(ToString::to_string).collect();
        let name_like = filter.name_like.as_ref();
        let (limit, offset) = window(page);
        let (total, rows) = with_conn!(self, |conn| {
            let total: i64 = filtered_proxies!(&tenant, &ids, name_like)
                .count()
                .get_result(conn)
                .await
                .db()?;
            let rows: Vec<ProxyRow> = filtered_proxies!(&tenant, &ids, name_like)
                .order((dsl::created_at.asc(), dsl::id.asc()))
                .limit(limit)
                .offset(offset)
                .select(ProxyRow::as_select())
                .load(conn)
                .await
                .db()?;
            Ok::<_, StoreError>((total, rows))
        })?;
        page_of(rows, total, page, StoredProxy::try_from)
    }

    async fn update_proxy(&self, proxy: &StoredProxy) -> Result<bool, StoreError> {
        let row = NewProxyRow::from(proxy);
        let updated = with_write_conn!(self, |conn| {
            diesel::update(
                proxies::table
                    .filter(dsl::tenant_id.eq(&row.tenant_id))
                    .filter(dsl::id.eq(&row.id)),
            )
            .set((
                dsl::name.eq(&row.name),
                dsl::name_search.eq(name_search_key(&row.name)),
                dsl::destination_url.eq(&row.destination_url),
                dsl::request_transform_sealed.eq(&row.request_transform_sealed),
                dsl::response_transform_sealed.eq(&row.response_transform_sealed),
                dsl::application_id.eq(&row.application_id),
                dsl::configuration.eq(&row.configuration),
                dsl::require_auth.eq(row.require_auth),
                dsl::modified_by.eq(&row.modified_by),
                dsl::modified_at.eq(row.modified_at),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(updated == 1)
    }

    async fn unsealed_proxies(&self, limit: u32) -> Result<Vec<UnsealedProxy>, StoreError> {
        type Clear = (String, String, String, Option<String>, Option<String>);
        let rows: Vec<Clear> = with_conn!(self, |conn| {
            proxies_unsealed::table
                .order((
                    proxies_unsealed::tenant_id.asc(),
                    proxies_unsealed::id.asc(),
                ))
                .limit(i64::from(limit))
                .select((
                    proxies_unsealed::tenant_id,
                    proxies_unsealed::id,
                    proxies_unsealed::proxy_key,
                    proxies_unsealed::request_transform,
                    proxies_unsealed::response_transform,
                ))
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter()
            .map(|(tenant, id, key, request, response)| {
                Ok(UnsealedProxy {
                    tenant_id: tenant.parse().map_err(|_| {
                        StoreError::Corrupt(format!("invalid tenant id `{tenant}`"))
                    })?,
                    id: id
                        .parse()
                        .map_err(|_| StoreError::Corrupt(format!("invalid proxy id `{id}`")))?,
                    key: Secret::new(key),
                    request_transform: request.map(Secret::new),
                    response_transform: response.map(Secret::new),
                })
            })
            .collect()
    }

    async fn seal_proxy(
        &self,
        tenant: TenantId,
        id: ProxyId,
        sealed: &SealedProxySecrets,
    ) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                let updated = diesel::update(
                    proxies::table
                        .filter(dsl::tenant_id.eq(&tenant))
                        .filter(dsl::id.eq(&id))
                        .filter(dsl::key_lookup.is_null()),
                )
                .set((
                    dsl::key_lookup.eq(sealed.key_lookup.as_slice()),
                    dsl::key_sealed.eq(&sealed.key_sealed),
                    dsl::request_transform_sealed.eq(&sealed.request_transform_sealed),
                    dsl::response_transform_sealed.eq(&sealed.response_transform_sealed),
                ))
                .execute(conn)
                .await?;
                diesel::delete(
                    proxies_unsealed::table
                        .filter(proxies_unsealed::tenant_id.eq(&tenant))
                        .filter(proxies_unsealed::id.eq(&id)),
                )
                .execute(conn)
                .await?;
                Ok(updated == 1)
            })
            .await
            .db()
        })
    }

    async fn purge_unsealed(&self) -> Result<(), StoreError> {
        let purged =
            crate::purge::purge_freed_space(self, &["proxies_unsealed", "proxies"]).await?;
        if purged == crate::purge::Purged::SnapshotsRemained {
            tracing::warn!(
                "sessions holding old snapshots kept running: the clear copies of sealed proxy secrets may survive in dead rows until `VACUUM FULL proxies, proxies_unsealed` is run"
            );
        }
        Ok(())
    }

    async fn delete_proxy(&self, tenant: TenantId, id: ProxyId) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let deleted = with_write_conn!(self, |conn| {
            diesel::delete(
                proxies::table
                    .filter(dsl::tenant_id.eq(&tenant))
                    .filter(dsl::id.eq(&id)),
            )
            .execute(conn)
            .await
            .db()
        })?;
        Ok(deleted == 1)
    }

    async fn proxies_using_application(
        &self,
        tenant: TenantId,
        application: ApplicationId,
        limit: u32,
    ) -> Result<Vec<(ProxyId, String)>, StoreError> {
        let (tenant, application) = (tenant.to_string(), application.to_string());
        let rows: Vec<(String, String)> = with_conn!(self, |conn| {
            proxies::table
                .filter(dsl::tenant_id.eq(&tenant))
                .filter(dsl::application_id.eq(&application))
                .order((dsl::created_at.asc(), dsl::id.asc()))
                .limit(i64::from(limit))
                .select((dsl::id, dsl::name))
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter()
            .map(|(id, name)| {
                id.parse()
                    .map(|id| (id, name))
                    .map_err(|_| StoreError::Corrupt(format!("invalid proxy id `{id}`")))
            })
            .collect()
    }
}
