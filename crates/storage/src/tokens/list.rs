//! `GET /tokens` and a parent's children: a page of a filtered list, and its containers.

use diesel::{BoolExpressionMethods, ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{ContainerScope, StoreError, StoredToken, TokenFilter, TokenListing},
    Container, Page, PageRequest, TenantId,
};

use super::queries::{
    distinct_containers, empty_page, filtered_children, filtered_tokens, parse_containers,
    FilterParams,
};
use crate::{
    database::{page_of, window, Database, DbResultExt},
    rows::TokenRow,
    scan::with_scan_conn,
    schema::{token_associations, token_metadata, tokens},
};

#[async_trait::async_trait]
impl TokenListing for Database {
    /// The distinct containers of a list.
    async fn token_containers(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
    ) -> Result<Vec<Container>, StoreError> {
        let params = &FilterParams::new(tenant, filter, &ContainerScope::All);
        let raw: Vec<String> = with_scan_conn!(self, |conn| {
            match &params.parent {
                Some(parent) => distinct_containers!(
                    tokens::table
                        .filter(tokens::tenant_id.eq(&params.tenant))
                        .filter(tokens::id.eq_any(
                            filtered_children!(params, parent).select(token_associations::child_id),
                        )),
                    conn
                ),
                None => distinct_containers!(filtered_tokens!(params), conn),
            }
        })?;
        parse_containers(&raw)
    }

    /// A page of a list, or of a parent's children.
    async fn list_tokens(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
        if let Some(empty) = empty_page(scope, page) {
            return Ok(empty);
        }
        let params = &FilterParams::new(tenant, filter, scope);
        let (total, rows) = if let Some(parent) = &params.parent {
            self.list_children(params, parent, page).await?
        } else {
            let (limit, offset) = window(page);
            with_scan_conn!(self, |conn| {
                let total: i64 = filtered_tokens!(params)
                    .count()
                    .get_result(conn)
                    .await
                    .db()?;
                let rows: Vec<TokenRow> = filtered_tokens!(params)
                    .order((tokens::created_at.asc(), tokens::id.asc()))
                    .limit(limit)
                    .offset(offset)
                    .select(TokenRow::as_select())
                    .load(conn)
                    .await
                    .db()?;
                Ok::<_, StoreError>((total, rows))
            })?
        };
        page_of(rows, total, page, StoredToken::try_from)
    }
}
