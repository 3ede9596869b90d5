//! `POST /tokens/search`: which metadata pair drives a search, and its pages and containers.

use diesel::{
    BoolExpressionMethods, EscapeExpressionMethods, ExpressionMethods, JoinOnDsl, QueryDsl,
    SelectableHelper, TextExpressionMethods,
};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{StoreError, StoredToken},
    Container, Page, PageRequest,
};

use super::queries::{
    distinct_containers, parse_containers, searched_by_pair, searched_tokens, with_token_criteria,
    SearchParams, FIRST_PAIR,
};
use crate::{
    database::{page_of, window, Database, DbResultExt},
    rows::TokenRow,
    scan::with_scan_conn,
    schema::{token_metadata, tokens},
};

/// Rows of one metadata pair counted, at most, when choosing the pair that drives a search.
const PAIR_SAMPLE: i64 = 1_000;

impl Database {
    /// Puts the search's rarest metadata pair first, so that it drives the search (its rows
    /// are read in page order and the other pairs only filter them): the search then costs
    /// what its most selective pair matches, however common the others are. Each pair's rows
    /// are counted up to [`PAIR_SAMPLE`] from the pair index. Returns `false` when a pair
    /// matches nothing (the search is empty). Nothing to do for fewer than two pairs.
    pub(super) async fn rarest_pair_first(
        &self,
        params: &mut SearchParams,
    ) -> Result<bool, StoreError> {
        if params.metadata.len() < 2 {
            return Ok(true);
        }
        let tenant = params.tenant.clone();
        let pairs = params.metadata.clone();
        let counts: Vec<usize> = with_scan_conn!(self, |conn| {
            let mut counts = Vec::with_capacity(pairs.len());
            for (key, value) in &pairs {
                let ids: Vec<String> = token_metadata::table
                    .filter(token_metadata::tenant_id.eq(&tenant))
                    .filter(token_metadata::key.eq(key))
                    .filter(token_metadata::value.eq(value))
                    .select(token_metadata::token_id)
                    .limit(PAIR_SAMPLE)
                    .load(conn)
                    .await
                    .db()?;
                if ids.is_empty() {
                    break;
                }
                counts.push(ids.len());
            }
            Ok::<_, StoreError>(counts)
        })?;
        if counts.len() < pairs.len() {
            return Ok(false);
        }
        let mut ranked: Vec<(usize, (String, String))> = counts.into_iter().zip(pairs).collect();
        ranked.sort_by_key(|(count, _)| *count);
        params.metadata = ranked.into_iter().map(|(_, pair)| pair).collect();
        Ok(true)
    }

    /// `TokenStore::search_containers`: the distinct containers of a search.
    pub(super) async fn searched_containers(
        &self,
        mut params: SearchParams,
    ) -> Result<Vec<Container>, StoreError> {
        if !self.rarest_pair_first(&mut params).await? {
            return Ok(Vec::new());
        }
        let raw: Vec<String> = with_scan_conn!(self, |conn| {
            match <[_]>::first(&params.metadata) {
                Some(first) => distinct_containers!(searched_by_pair!(&params, first), conn),
                None => distinct_containers!(searched_tokens!(&params), conn),
            }
        })?;
        parse_containers(&raw)
    }

    /// `TokenStore::search_tokens`: a page of a search, newest first.
    pub(super) async fn search_page(
        &self,
        mut params: SearchParams,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
        if !self.rarest_pair_first(&mut params).await? {
            return page_of(Vec::<TokenRow>::new(), 0, page, StoredToken::try_from);
        }
        let (limit, offset) = window(page);
        let (total, rows) = with_scan_conn!(self, |conn| {
            let (total, rows): (i64, Vec<TokenRow>) = match <[_]>::first(&params.metadata) {
                Some(first) => (
                    searched_by_pair!(&params, first)
                        .count()
                        .get_result(conn)
                        .await
                        .db()?,
                    searched_by_pair!(&params, first, page limit, offset)
                        .select(TokenRow::as_select())
                        .load(conn)
                        .await
                        .db()?,
                ),
                None => (
                    searched_tokens!(&params)
                        .count()
                        .get_result(conn)
                        .await
                        .db()?,
                    searched_tokens!(&params)
                        .order((tokens::created_at.desc(), tokens::id.desc()))
                        .limit(limit)
                        .offset(offset)
                        .select(TokenRow::as_select())
                        .load(conn)
                        .await
                        .db()?,
                ),
            };
            Ok::<_, StoreError>((total, rows))
        })?;
        page_of(rows, total, page, StoredToken::try_from)
    }
}
