//! `POST /tokens/search`: which metadata pair drives a search, and its pages, its containers
//! and its cursor walks (keyset pages, newest first).

use diesel::{
    BoolExpressionMethods, EscapeExpressionMethods, ExpressionMethods, JoinOnDsl, QueryDsl,
    SelectableHelper, TextExpressionMethods,
};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{ContainerScope, Position, StoreError, StoredToken, TokenSearch, TokenSearching},
    Container, Page, PageRequest, TenantId,
};

use super::queries::{
    distinct_containers, empty_page, parse_containers, searched_by_pair, searched_tokens,
    with_token_criteria, SearchParams, FIRST_PAIR,
};
use crate::{
    database::{page_of, window, Database, DbResultExt},
    rows::{to_db_time, TokenRow},
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
}

#[async_trait::async_trait]
impl TokenSearching for Database {
    /// The distinct containers of a search.
    async fn search_containers(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
    ) -> Result<Vec<Container>, StoreError> {
        let mut params = SearchParams::new(tenant, search, &ContainerScope::All);
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

    /// A page of a search, newest first.
    async fn search_tokens(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
        if let Some(empty) = empty_page(scope, page) {
            return Ok(empty);
        }
        let mut params = SearchParams::new(tenant, search, scope);
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

    /// Up to `limit` tokens of a search strictly after `after`: one keyset page of a cursor
    /// walk (docs/api.md "Cursor pages"), with a range condition instead of an offset, so a
    /// page costs what it returns however deep the walk is, and tokens created meanwhile
    /// (newer than the walk's start) never shift it.
    async fn search_tokens_after(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
        scope: &ContainerScope,
        after: Option<Position>,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError> {
        if matches!(scope, ContainerScope::Only(cs) if cs.is_empty()) {
            return Ok(Vec::new());
        }
        let mut params = SearchParams::new(tenant, search, scope);
        if !self.rarest_pair_first(&mut params).await? {
            return Ok(Vec::new());
        }
        let after = after.map(|p| (to_db_time(p.created_at), p.id.to_string()));
        let limit = i64::from(limit);
        let rows: Vec<TokenRow> = with_scan_conn!(self, |conn| {
            match <[_]>::first(&params.metadata) {
                Some(first) => {
                    let pair = FIRST_PAIR;
                    let (at, id) = (
                        pair.field(token_metadata::created_at),
                        pair.field(token_metadata::token_id),
                    );
                    let mut q = searched_by_pair!(&params, first);
                    if let Some((c, i)) = &after {
                        q = q.filter(at.lt(*c).or(at.eq(*c).and(id.lt(i))));
                    }
                    q.order((at.desc(), id.desc()))
                        .limit(limit)
                        .select(TokenRow::as_select())
                        .load(conn)
                        .await
                        .db()
                }
                None => {
                    let mut q = searched_tokens!(&params);
                    if let Some((c, i)) = &after {
                        q = q.filter(
                            tokens::created_at
                                .lt(*c)
                                .or(tokens::created_at.eq(*c).and(tokens::id.lt(i))),
                        );
                    }
                    q.order((tokens::created_at.desc(), tokens::id.desc()))
                        .limit(limit)
                        .select(TokenRow::as_select())
                        .load(conn)
                        .await
                        .db()
                }
            }
        })?;
        rows.into_iter().map(StoredToken::try_from).collect()
    }
}
