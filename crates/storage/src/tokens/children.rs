//! A parent's children, a page at a time: ids from the link index, then the rows by primary key.

use diesel::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use tessera_domain::{store::StoreError, PageRequest};

use super::queries::{filtered_children, FilterParams};
use crate::{
    database::{window, Database, DbResultExt},
    rows::TokenRow,
    scan::with_scan_conn,
    schema::{token_associations, token_metadata, tokens},
};

impl Database {
    /// A page of a parent's children: ids from the link index, then the rows by primary key.
    pub(super) async fn list_children(
        &self,
        p: &FilterParams,
        parent: &String,
        page: PageRequest,
    ) -> Result<(i64, Vec<TokenRow>), StoreError> {
        let (limit, offset) = window(page);
        with_scan_conn!(self, |conn| {
            let total: i64 = filtered_children!(p, parent)
                .count()
                .get_result(conn)
                .await
                .db()?;
            let ids: Vec<String> = filtered_children!(p, parent)
                .order((
                    token_associations::child_created_at.asc(),
                    token_associations::child_id.asc(),
                ))
                .limit(limit)
                .offset(offset)
                .select(token_associations::child_id)
                .load(conn)
                .await
                .db()?;
            let mut rows: Vec<TokenRow> = if ids.is_empty() {
                vec![]
            } else {
                tokens::table
                    .filter(tokens::tenant_id.eq(&p.tenant))
                    .filter(tokens::id.eq_any(&ids))
                    .select(TokenRow::as_select())
                    .load(conn)
                    .await
                    .db()?
            };
            rows.sort_by_key(|r| ids.iter().position(|id| *id == r.id));
            Ok::<_, StoreError>((total, rows))
        })
    }
}
