//! `GET /tokens` and a parent's children: a page of a filtered list, and its containers.

use diesel::{BoolExpressionMethods, ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{StoreError, StoredToken},
    Container, Page, PageRequest,
};

use super::queries::{
    distinct_containers, filtered_children, filtered_tokens, parse_containers, FilterParams,
};
use crate::{
    database::{page_of, window, Database, DbResultExt},
    rows::TokenRow,
    scan::with_scan_conn,
    schema::{token_associations, token_metadata, tokens},
};

impl Database {
    /// `TokenStore::token_containers`: the distinct containers of a list.
    pub(super) async fn listed_containers(
        &self,
        params: &FilterParams,
    ) -> Result<Vec<Container>, StoreError> {
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

    /// `TokenStore::list_tokens`: a page of a list, or of a parent's children.
    pub(super) async fn list_page(
        &self,
        params: &FilterParams,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
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
