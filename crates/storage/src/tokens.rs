//! [`TokenStore`] for both backends.

use async_trait::async_trait;
use diesel::{
    AsChangeset, BoolExpressionMethods, EscapeExpressionMethods, ExpressionMethods, JoinOnDsl,
    QueryDsl, SelectableHelper, TextExpressionMethods,
};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    store::{
        ContainerScope, NewAssociation, StoreError, StoredToken, TokenFilter, TokenSearch,
        TokenStore, TokenUpdate,
    },
    Container, Page, PageRequest, TenantId, TokenId, TokenType,
};
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::{
    database::{
        checkout, only_row, page_of, window, with_conn, with_read_conn, Database, DbResultExt,
        Pools,
    },
    rows::{to_db_time, AssociationRow, TokenMetadataRow, TokenRow},
    scan::with_scan_conn,
    schema::{token_associations, token_metadata, tokens},
};

/// A [`TokenFilter`] and [`ContainerScope`] as the strings the columns hold.
struct FilterParams {
    live_at: Option<PrimitiveDateTime>,
    tenant: String,
    parent: Option<String>,
    ids: Vec<String>,
    types: Vec<String>,
    metadata: Vec<(String, String)>,
    containers: Option<Vec<String>>,
}

impl FilterParams {
    fn new(tenant: TenantId, filter: &TokenFilter, scope: &ContainerScope) -> Self {
        Self {
            live_at: filter.live_at.map(to_db_time),
            tenant: tenant.to_string(),
            parent: filter.parent.map(|p| p.to_string()),
            ids: filter.ids.iter().map(ToString::to_string).collect(),
            types: filter
                .types
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
            metadata: filter.metadata.clone(),
            containers: match scope {
                ContainerScope::All => None,
                ContainerScope::Only(cs) => {
                    Some(cs.iter().map(|c| c.as_str().to_string()).collect())
                }
            },
        }
    }
}

/// The boxed `tokens` query for one tenant with every filter applied (AND). A macro rather
/// than a function because the boxed query's type depends on the backend of each expansion.
macro_rules! filtered_tokens {
    ($p:expr) => {{
        let p: &FilterParams = $p;
        let mut q = tokens::table
            .filter(tokens::tenant_id.eq(&p.tenant))
            .into_boxed();
        if let Some(at) = p.live_at {
            q = q.filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(at)));
        }
        if !p.ids.is_empty() {
            q = q.filter(tokens::id.eq_any(&p.ids));
        }
        if !p.types.is_empty() {
            q = q.filter(tokens::token_type.eq_any(&p.types));
        }
        // One primary-key probe per row and pair (see `with_token_criteria!`).
        for (key, value) in &p.metadata {
            q = q.filter(
                token_metadata::table
                    .filter(token_metadata::tenant_id.eq(tokens::tenant_id))
                    .filter(token_metadata::token_id.eq(tokens::id))
                    .filter(token_metadata::key.eq(key))
                    .select(token_metadata::value)
                    .single_value()
                    .eq(value),
            );
        }
        if let Some(containers) = &p.containers {
            q = q.filter(tokens::container.eq_any(containers));
        }
        q
    }};
}

/// The boxed `token_associations` query for one parent's children with every filter applied.
/// Ids, types and metadata are answered from the link rows (type is copied into them); only
/// the container scope consults `tokens`, as a semi-join. Ordered by the copied
/// `child_created_at`, a page is one range read of `token_associations_children`.
macro_rules! filtered_children {
    ($p:expr, $parent:expr) => {{
        let p: &FilterParams = $p;
        let parent: &String = $parent;
        let mut q = token_associations::table
            .filter(token_associations::tenant_id.eq(&p.tenant))
            .filter(token_associations::parent_id.eq(parent))
            .into_boxed();
        if !p.ids.is_empty() {
            q = q.filter(token_associations::child_id.eq_any(&p.ids));
        }
        if let Some(at) = p.live_at {
            // Expired children not swept yet: few, found through the partial expiry index.
            q = q.filter(
                token_associations::child_id.ne_all(
                    tokens::table
                        .filter(tokens::expires_at.le(at))
                        .filter(tokens::tenant_id.eq(&p.tenant))
                        .select(tokens::id),
                ),
            );
        }
        if !p.types.is_empty() {
            q = q.filter(token_associations::child_type.eq_any(&p.types));
        }
        // One primary-key probe per link and pair (see `with_token_criteria!`).
        for (key, value) in &p.metadata {
            q = q.filter(
                token_metadata::table
                    .filter(token_metadata::tenant_id.eq(token_associations::tenant_id))
                    .filter(token_metadata::token_id.eq(token_associations::child_id))
                    .filter(token_metadata::key.eq(key))
                    .select(token_metadata::value)
                    .single_value()
                    .eq(value),
            );
        }
        if let Some(containers) = &p.containers {
            q = q.filter(
                token_associations::child_id.eq_any(
                    tokens::table
                        .filter(tokens::tenant_id.eq(&p.tenant))
                        .filter(tokens::container.eq_any(containers))
                        .select(tokens::id),
                ),
            );
        }
        q
    }};
}

/// A [`TokenSearch`] and [`ContainerScope`] as the values the columns hold.
struct SearchParams {
    tenant: String,
    live_at: Option<PrimitiveDateTime>,
    metadata: Vec<(String, String)>,
    types: Vec<String>,
    fingerprint: Option<String>,
    /// `LIKE` pattern of the container prefix, `\` escaping.
    container_like: Option<String>,
    created_after: Option<PrimitiveDateTime>,
    created_before: Option<PrimitiveDateTime>,
    containers: Option<Vec<String>>,
    /// `LIKE` patterns, one per destination pattern the binding must hold (patterns hold no
    /// `LIKE` wildcard: `%` and `_` are not valid in them).
    destinations: Vec<String>,
}

impl SearchParams {
    fn new(tenant: TenantId, search: &TokenSearch, scope: &ContainerScope) -> Self {
        Self {
            tenant: tenant.to_string(),
            live_at: search.live_at.map(to_db_time),
            metadata: search.metadata.clone(),
            types: search
                .types
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
            fingerprint: search.fingerprint.clone(),
            container_like: search.container_prefix.as_ref().map(|c| {
                let mut pattern = String::with_capacity(c.as_str().len() + 4);
                for ch in c.as_str().chars() {
                    if matches!(ch, '%' | '_' | '\\') {
                        pattern.push('\\');
                    }
                    pattern.push(ch);
                }
                pattern.push('%');
                pattern
            }),
            created_after: search.created_after.map(to_db_time),
            created_before: search.created_before.map(to_db_time),
            destinations: search
                .destinations
                .iter()
                .map(|p| format!("%\"{p}\"%"))
                .collect(),
            containers: match scope {
                ContainerScope::All => None,
                ContainerScope::Only(cs) => {
                    Some(cs.iter().map(|c| c.as_str().to_string()).collect())
                }
            },
        }
    }
}

/// Applies a search's criteria on `tokens` columns to the boxed query `$q`, metadata pairs
/// as semi-joins on `token_metadata_pair`.
macro_rules! with_token_criteria {
    ($q:expr, $p:expr, $pairs:expr) => {{
        let p: &SearchParams = $p;
        let mut q = $q;
        if let Some(at) = p.live_at {
            q = q.filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(at)));
        }
        if let Some(fingerprint) = &p.fingerprint {
            q = q.filter(tokens::fingerprint.eq(fingerprint));
        }
        if !p.types.is_empty() {
            q = q.filter(tokens::token_type.eq_any(&p.types));
        }
        // Each further pair is a scalar subquery on (tenant, token, key): one index probe per
        // candidate row, whatever the planner believes about the pairs' sizes. PostgreSQL
        // never turns a scalar subquery into a join, as it does `IN` and `EXISTS` — with
        // stale statistics (a tenant that just imported its tokens) those joins became nested
        // loops over whole pairs and ran for minutes (attack finding 7). The covering index
        // `token_metadata_lookup` (migration 000007) makes the probe index-only.
        for (key, value) in $pairs {
            q = q.filter(
                token_metadata::table
                    .filter(token_metadata::tenant_id.eq(tokens::tenant_id))
                    .filter(token_metadata::token_id.eq(tokens::id))
                    .filter(token_metadata::key.eq(key))
                    .select(token_metadata::value)
                    .single_value()
                    .eq(value),
            );
        }
        if let Some(like) = &p.container_like {
            q = q.filter(tokens::container.like(like).escape('\\'));
        }
        if let Some(after) = p.created_after {
            q = q.filter(tokens::created_at.gt(after));
        }
        if let Some(before) = p.created_before {
            q = q.filter(tokens::created_at.lt(before));
        }
        for pattern in &p.destinations {
            q = q.filter(tokens::destinations.like(pattern));
        }
        if let Some(containers) = &p.containers {
            q = q.filter(tokens::container.eq_any(containers));
        }
        q
    }};
}

/// The boxed `tokens` query of a search without metadata: a fingerprint is answered (in page
/// order) from `tokens_fingerprint`.
macro_rules! searched_tokens {
    ($p:expr) => {{
        let p: &SearchParams = $p;
        with_token_criteria!(
            tokens::table
                .filter(tokens::tenant_id.eq(&p.tenant))
                .into_boxed(),
            p,
            std::iter::empty::<&(String, String)>()
        )
    }};
}

// A search with metadata is driven by the first pair's rows in `token_metadata_pair_newest`
// (already in page order: newest first), joined to their tokens by primary key; the other
// criteria filter those. The driving pair's rows go under another name: the other pairs' semi-joins name
// `token_metadata` itself.
diesel::alias!(token_metadata as FIRST_PAIR: FirstPair);

macro_rules! searched_by_pair {
    // The page: ordered by the pair's own copy of `created_at` (then the token id), which its
    // index holds in that order — ordering by the `tokens` columns instead would let SQLite's
    // planner walk `tokens_page` to avoid a sort.
    ($p:expr, $first:expr, page $limit:expr, $offset:expr) => {{
        let pair = FIRST_PAIR;
        searched_by_pair!($p, $first)
            .order((
                pair.field(token_metadata::created_at).desc(),
                pair.field(token_metadata::token_id).desc(),
            ))
            .limit($limit)
            .offset($offset)
    }};
    ($p:expr, $first:expr) => {{
        let p: &SearchParams = $p;
        let (key, value): &(String, String) = $first;
        let pair = FIRST_PAIR;
        with_token_criteria!(
            pair.inner_join(
                tokens::table.on(tokens::tenant_id
                    .eq(pair.field(token_metadata::tenant_id))
                    .and(tokens::id.eq(pair.field(token_metadata::token_id)))),
            )
            .filter(pair.field(token_metadata::tenant_id).eq(&p.tenant))
            .filter(pair.field(token_metadata::key).eq(key))
            .filter(pair.field(token_metadata::value).eq(value))
            .into_boxed(),
            p,
            p.metadata.iter().skip(1)
        )
    }};
}

/// Rows of one metadata pair counted, at most, when choosing the pair that drives a search.
const PAIR_SAMPLE: i64 = 1_000;

impl Database {
    /// Puts the search's rarest metadata pair first, so that it drives the search (its rows
    /// are read in page order and the other pairs only filter them): the search then costs
    /// what its most selective pair matches, however common the others are. Each pair's rows
    /// are counted up to [`PAIR_SAMPLE`] from the pair index. Returns `false` when a pair
    /// matches nothing (the search is empty). Nothing to do for fewer than two pairs.
    async fn rarest_pair_first(&self, params: &mut SearchParams) -> Result<bool, StoreError> {
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

/// Inserts one token row and its metadata rows on `conn`, inside the caller's transaction
/// (`?` returns its `diesel::result::Error`). One statement per pair: diesel's multi-row
/// INSERT is not available for SQLite through diesel-async; at most 100 pairs.
macro_rules! insert_token_with_metadata {
    ($conn:expr, $row:expr, $metadata:expr) => {{
        diesel::insert_into(tokens::table)
            .values($row)
            .execute($conn)
            .await?;
        for pair in $metadata {
            diesel::insert_into(token_metadata::table)
                .values(pair)
                .execute($conn)
                .await?;
        }
    }};
}

/// The columns [`TokenStore::update_token`] writes; `None` leaves a column alone.
#[derive(AsChangeset)]
#[diesel(table_name = tokens)]
struct TokenChangeset {
    metadata: String,
    data_ciphertext: Option<Vec<u8>>,
    fingerprint: Option<String>,
    expires_at: Option<Option<PrimitiveDateTime>>,
    destinations: Option<Option<String>>,
    modified_by: String,
    modified_at: PrimitiveDateTime,
}

/// Container paths read back from the `container` column.
fn parse_containers(raw: &[String]) -> Result<Vec<Container>, StoreError> {
    raw.iter()
        .map(|c| {
            Container::parse(c).map_err(|_| StoreError::Corrupt(format!("invalid container `{c}`")))
        })
        .collect()
}

/// The empty page, when `scope` admits no container: answered without asking the database.
fn empty_page(scope: &ContainerScope, page: PageRequest) -> Option<Page<StoredToken>> {
    matches!(scope, ContainerScope::Only(cs) if cs.is_empty()).then_some(Page {
        items: vec![],
        total_items: 0,
        request: page,
    })
}

impl Database {
    /// Writes a token, its metadata pairs and (for a child) its link to the parent in one
    /// transaction, so a failure leaves nothing behind.
    pub(crate) async fn insert_token_rows(
        &self,
        token: &StoredToken,
        link: Option<&NewAssociation>,
    ) -> Result<(), StoreError> {
        let row = TokenRow::from(token);
        let metadata = TokenMetadataRow::for_token(token);
        let link = link.map(AssociationRow::from);
        with_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                insert_token_with_metadata!(conn, &row, &metadata);
                if let Some(link) = &link {
                    diesel::insert_into(token_associations::table)
                        .values(link)
                        .execute(conn)
                        .await?;
                }
                Ok(())
            })
            .await
            .db()
        })
    }

    /// Writes several tokens with their metadata in one transaction.
    async fn insert_token_batch(&self, batch: &[StoredToken]) -> Result<(), StoreError> {
        let rows: Vec<(TokenRow, Vec<TokenMetadataRow>)> = batch
            .iter()
            .map(|t| (TokenRow::from(t), TokenMetadataRow::for_token(t)))
            .collect();
        with_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                for (row, metadata) in &rows {
                    insert_token_with_metadata!(conn, row, metadata);
                }
                Ok(())
            })
            .await
            .db()
        })
    }

    /// A page of a parent's children: ids from the link index, then the rows by primary key.
    async fn list_children(
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

#[async_trait]
impl TokenStore for Database {
    async fn insert_token(&self, token: &StoredToken) -> Result<(), StoreError> {
        self.insert_token_rows(token, None).await
    }

    async fn get_token(
        &self,
        tenant: TenantId,
        id: TokenId,
    ) -> Result<Option<StoredToken>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let row = with_read_conn!(self, |conn| {
            tokens::table
                .filter(tokens::tenant_id.eq(&tenant))
                .filter(tokens::id.eq(&id))
                .select(TokenRow::as_select())
                .load(conn)
                .await
                .db()
                .map(only_row)
        })?;
        row.map(StoredToken::try_from).transpose()
    }

    async fn get_tokens(
        &self,
        tenant: TenantId,
        ids: &[TokenId],
    ) -> Result<Vec<StoredToken>, StoreError> {
        // Each id once, as `IN (…)` would have answered.
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        match &self.pools {
            // SQLite spells `eq_any` as `IN (?, ?, …)`, a statement that changes with the
            // number of ids, which diesel therefore prepares anew on every call; `get_token`'s
            // cached point-read statement, once per id, costs less on a connection run
            // in-process.
            Pools::Sqlite { .. } => {
                let mut found = Vec::with_capacity(ids.len());
                for id in ids {
                    found.extend(self.get_token(tenant, id).await?);
                }
                Ok(found)
            }
            // PostgreSQL: the same point read per id, all sent at once on one connection
            // (pipelined: one round trip). Not `id = ANY($2)`: its generic plan may scan the
            // tenant's tokens through another index (seen on a young table before ANALYZE,
            // which made the server the bottleneck), where equality on both key columns is
            // always one primary-key probe.
            Pools::Postgres { reads, .. } => {
                let tenant = tenant.to_string();
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                let object = checkout(reads.local()?).await?;
                let conn: &diesel_async::AsyncPgConnection = &object;
                let reads = ids.iter().map(|id| {
                    let mut conn = conn;
                    let tenant = &tenant;
                    async move {
                        tokens::table
                            .filter(tokens::tenant_id.eq(tenant))
                            .filter(tokens::id.eq(id))
                            .select(TokenRow::as_select())
                            .load::<TokenRow>(&mut conn)
                            .await
                    }
                });
                futures_util::future::try_join_all(reads)
                    .await
                    .db()?
                    .into_iter()
                    .flatten()
                    .map(StoredToken::try_from)
                    .collect()
            }
        }
    }

    async fn token_containers(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
    ) -> Result<Vec<Container>, StoreError> {
        let params = FilterParams::new(tenant, filter, &ContainerScope::All);
        let raw: Vec<String> = with_scan_conn!(self, |conn| {
            match &params.parent {
                Some(parent) => tokens::table
                    .filter(tokens::tenant_id.eq(&params.tenant))
                    .filter(tokens::id.eq_any(
                        filtered_children!(&params, parent).select(token_associations::child_id),
                    ))
                    .select(tokens::container)
                    .distinct()
                    .load(conn)
                    .await
                    .db(),
                None => filtered_tokens!(&params)
                    .select(tokens::container)
                    .distinct()
                    .load(conn)
                    .await
                    .db(),
            }
        })?;
        parse_containers(&raw)
    }

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
        let params = FilterParams::new(tenant, filter, scope);
        let (total, rows) = if let Some(parent) = &params.parent {
            self.list_children(&params, parent, page).await?
        } else {
            let (limit, offset) = window(page);
            with_scan_conn!(self, |conn| {
                let total: i64 = filtered_tokens!(&params)
                    .count()
                    .get_result(conn)
                    .await
                    .db()?;
                let rows: Vec<TokenRow> = filtered_tokens!(&params)
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

    async fn delete_token(&self, tenant: TenantId, id: TokenId) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let deleted = with_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                // Links in both directions go with the token; the tokens at the other end stay.
                diesel::delete(
                    token_associations::table
                        .filter(token_associations::tenant_id.eq(&tenant))
                        .filter(
                            token_associations::parent_id
                                .eq(&id)
                                .or(token_associations::child_id.eq(&id)),
                        ),
                )
                .execute(conn)
                .await?;
                diesel::delete(
                    token_metadata::table
                        .filter(token_metadata::tenant_id.eq(&tenant))
                        .filter(token_metadata::token_id.eq(&id)),
                )
                .execute(conn)
                .await?;
                diesel::delete(
                    tokens::table
                        .filter(tokens::tenant_id.eq(&tenant))
                        .filter(tokens::id.eq(&id)),
                )
                .execute(conn)
                .await
            })
            .await
            .db()
        })?;
        Ok(deleted == 1)
    }

    async fn insert_tokens(&self, batch: &[StoredToken]) -> Result<(), StoreError> {
        self.insert_token_batch(batch).await
    }

    async fn update_token(&self, update: &TokenUpdate) -> Result<bool, StoreError> {
        let (tenant, id) = (update.tenant_id.to_string(), update.id.to_string());
        let expected = to_db_time(update.expected_modified_at);
        let live_at = to_db_time(update.live_at);
        let changes = TokenChangeset {
            metadata: serde_json::to_string(&update.metadata)
                .map_err(|e| StoreError::Backend(format!("serialising metadata: {e}")))?,
            data_ciphertext: update.ciphertext.clone(),
            fingerprint: update.fingerprint.clone(),
            expires_at: Some(update.expires_at.map(to_db_time)),
            destinations: update
                .destinations
                .as_ref()
                .map(|d| d.as_ref().map(|d| d.to_json())),
            modified_by: update.modified_by.to_string(),
            modified_at: to_db_time(update.modified_at),
        };
        let metadata = TokenMetadataRow::pairs(
            update.tenant_id,
            update.id,
            update.created_at,
            &update.metadata,
        );
        with_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                let updated = diesel::update(
                    tokens::table
                        .filter(tokens::tenant_id.eq(&tenant))
                        .filter(tokens::id.eq(&id))
                        .filter(tokens::modified_at.eq(expected))
                        .filter(
                            tokens::expires_at
                                .is_null()
                                .or(tokens::expires_at.gt(live_at)),
                        ),
                )
                .set(&changes)
                .execute(conn)
                .await?;
                if updated != 1 {
                    return Ok(false);
                }
                diesel::delete(
                    token_metadata::table
                        .filter(token_metadata::tenant_id.eq(&tenant))
                        .filter(token_metadata::token_id.eq(&id)),
                )
                .execute(conn)
                .await?;
                for pair in &metadata {
                    diesel::insert_into(token_metadata::table)
                        .values(pair)
                        .execute(conn)
                        .await?;
                }
                Ok(true)
            })
            .await
            .db()
        })
    }

    async fn find_duplicate_token(
        &self,
        tenant: TenantId,
        token_type: TokenType,
        container: &Container,
        fingerprint: &str,
        live_at: OffsetDateTime,
    ) -> Result<Option<StoredToken>, StoreError> {
        let tenant = tenant.to_string();
        let live_at = to_db_time(live_at);
        let row = with_conn!(self, |conn| {
            tokens::table
                .filter(tokens::tenant_id.eq(&tenant))
                .filter(tokens::fingerprint.eq(fingerprint))
                .filter(tokens::token_type.eq(token_type.as_str()))
                .filter(tokens::container.eq(container.as_str()))
                .filter(
                    tokens::expires_at
                        .is_null()
                        .or(tokens::expires_at.gt(live_at)),
                )
                .order((tokens::created_at.asc(), tokens::id.asc()))
                .limit(1)
                .select(TokenRow::as_select())
                .load(conn)
                .await
                .db()
                .map(only_row)
        })?;
        row.map(StoredToken::try_from).transpose()
    }

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
                Some(first) => searched_by_pair!(&params, first)
                    .select(tokens::container)
                    .distinct()
                    .load(conn)
                    .await
                    .db(),
                None => searched_tokens!(&params)
                    .select(tokens::container)
                    .distinct()
                    .load(conn)
                    .await
                    .db(),
            }
        })?;
        parse_containers(&raw)
    }

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

    async fn delete_expired_tokens(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let now = to_db_time(now);
        with_conn!(self, |conn| {
            let expired: Vec<(String, String)> = tokens::table
                .filter(tokens::expires_at.le(now))
                .order(tokens::expires_at.asc())
                .limit(i64::from(limit))
                .select((tokens::tenant_id, tokens::id))
                .load(conn)
                .await
                .db()?;
            let mut deleted = 0u64;
            // One statement per token, each only if the token is still expired (another
            // process may have swept it already): metadata and associations go with it by
            // ON DELETE CASCADE, on both backends.
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                for (tenant, id) in &expired {
                    let n = diesel::delete(
                        tokens::table
                            .filter(tokens::tenant_id.eq(tenant))
                            .filter(tokens::id.eq(id))
                            .filter(tokens::expires_at.le(now)),
                    )
                    .execute(conn)
                    .await?;
                    deleted += n as u64;
                }
                Ok(())
            })
            .await
            .db()?;
            Ok::<_, StoreError>(deleted)
        })
    }

    async fn unfingerprinted_tokens(&self, limit: u32) -> Result<Vec<StoredToken>, StoreError> {
        let rows: Vec<TokenRow> = with_conn!(self, |conn| {
            tokens::table
                .filter(tokens::fingerprint.eq(""))
                .limit(i64::from(limit))
                .select(TokenRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(StoredToken::try_from).collect()
    }

    async fn set_token_fingerprint(
        &self,
        tenant: TenantId,
        id: TokenId,
        fingerprint: &str,
    ) -> Result<(), StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        with_conn!(self, |conn| {
            diesel::update(
                tokens::table
                    .filter(tokens::tenant_id.eq(&tenant))
                    .filter(tokens::id.eq(&id))
                    .filter(tokens::fingerprint.eq("")),
            )
            .set(tokens::fingerprint.eq(fingerprint))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(())
    }
}
