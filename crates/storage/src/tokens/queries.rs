//! What the token queries are built from: the domain's criteria as the values the columns hold
//! ([`FilterParams`], [`SearchParams`]), the boxed queries over them (macros, because a boxed
//! query's type depends on the backend of each expansion), and the shaping of their results.

use tessera_domain::{
    store::{ContainerScope, StoreError, StoredToken, TokenFilter, TokenSearch},
    Container, Page, PageRequest, TenantId, TokenType,
};
use time::PrimitiveDateTime;

use crate::{rows::to_db_time, schema::token_metadata};

/// Token types as the `token_type` column holds them.
fn type_names(types: &[TokenType]) -> Vec<String> {
    types.iter().map(|t| t.as_str().to_string()).collect()
}

/// A container scope as the `container` column's values (`None`: every container).
fn scope_containers(scope: &ContainerScope) -> Option<Vec<String>> {
    match scope {
        ContainerScope::All => None,
        ContainerScope::Only(cs) => Some(cs.iter().map(|c| c.as_str().to_string()).collect()),
    }
}

/// A [`TokenFilter`] and [`ContainerScope`] as the strings the columns hold.
pub(super) struct FilterParams {
    pub(super) live_at: Option<PrimitiveDateTime>,
    pub(super) tenant: String,
    pub(super) parent: Option<String>,
    pub(super) ids: Vec<String>,
    pub(super) types: Vec<String>,
    pub(super) metadata: Vec<(String, String)>,
    pub(super) containers: Option<Vec<String>>,
}

impl FilterParams {
    pub(super) fn new(tenant: TenantId, filter: &TokenFilter, scope: &ContainerScope) -> Self {
        Self {
            live_at: filter.live_at.map(to_db_time),
            tenant: tenant.to_string(),
            parent: filter.parent.as_ref().map(ToString::to_string),
            ids: filter.ids.iter().map(ToString::to_string).collect(),
            types: type_names(&filter.types),
            metadata: filter.metadata.clone(),
            containers: scope_containers(scope),
        }
    }
}

/// Deletes the search index rows of token `id` (which reference their tenant, not their
/// token, as metadata rows do: docs/architecture.md "Writing tokens"), on either backend's
/// connection.
macro_rules! delete_search_rows {
    ($conn:expr, $tenant:expr, $id:expr) => {
        diesel::delete(
            token_search_index::table
                .filter(token_search_index::tenant_id.eq($tenant))
                .filter(token_search_index::token_id.eq($id)),
        )
        .execute($conn)
    };
}
pub(super) use delete_search_rows;

/// Whether the token in the outer row (`$tenant`, `$token`: its columns) has the metadata pair
/// `$key` = `$value`, as a scalar subquery on `(tenant, token, key)`: one primary-key probe per
/// outer row, whatever the planner believes about the pairs' sizes (see
/// `with_token_criteria!`).
macro_rules! metadata_pair_is {
    ($tenant:expr, $token:expr, $key:expr, $value:expr) => {
        token_metadata::table
            .filter(token_metadata::tenant_id.eq($tenant))
            .filter(token_metadata::token_id.eq($token))
            .filter(token_metadata::key.eq($key))
            .select(token_metadata::value)
            .single_value()
            .eq($value)
    };
}
pub(super) use metadata_pair_is;

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
            q = q.filter($crate::tokens::queries::metadata_pair_is!(
                tokens::tenant_id,
                tokens::id,
                key,
                value
            ));
        }
        if let Some(containers) = &p.containers {
            q = q.filter(tokens::container.eq_any(containers));
        }
        q
    }};
}
pub(super) use filtered_tokens;

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
            q = q.filter($crate::tokens::queries::metadata_pair_is!(
                token_associations::tenant_id,
                token_associations::child_id,
                key,
                value
            ));
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
pub(super) use filtered_children;

/// A [`TokenSearch`] and [`ContainerScope`] as the values the columns hold.
pub(super) struct SearchParams {
    pub(super) tenant: String,
    pub(super) live_at: Option<PrimitiveDateTime>,
    pub(super) ids: Vec<String>,
    pub(super) metadata: Vec<(String, String)>,
    pub(super) types: Vec<String>,
    pub(super) fingerprint: Option<String>,
    /// `LIKE` pattern of the container prefix, `\` escaping.
    pub(super) container_like: Option<String>,
    pub(super) created_after: Option<PrimitiveDateTime>,
    pub(super) created_before: Option<PrimitiveDateTime>,
    pub(super) containers: Option<Vec<String>>,
    /// `LIKE` patterns, one per destination pattern the binding must hold (patterns hold no
    /// `LIKE` wildcard: `%` and `_` are not valid in them).
    pub(super) destinations: Vec<String>,
    /// The keyed hashes of `data:` terms: each must be one of the token's index values.
    pub(super) data_hashes: Vec<Vec<u8>>,
}

impl SearchParams {
    pub(super) fn new(tenant: TenantId, search: &TokenSearch, scope: &ContainerScope) -> Self {
        Self {
            tenant: tenant.to_string(),
            live_at: search.live_at.map(to_db_time),
            ids: search.ids.iter().map(ToString::to_string).collect(),
            metadata: search.metadata.clone(),
            types: type_names(&search.types),
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
            data_hashes: search.data_hashes.iter().map(|h| h.to_vec()).collect(),
            containers: scope_containers(scope),
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
        if !p.ids.is_empty() {
            q = q.filter(tokens::id.eq_any(&p.ids));
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
        // loops over whole pairs and ran for minutes. The covering index
        // `token_metadata_lookup` (migration 000007) makes the probe index-only.
        for (key, value) in $pairs {
            q = q.filter($crate::tokens::queries::metadata_pair_is!(
                tokens::tenant_id,
                tokens::id,
                key,
                value
            ));
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
        // Each `data:` term: the tokens whose index holds its hash, looked up within the
        // caller's containers (the index rows carry the container), so what other
        // containers hold is never read.
        for hash in &p.data_hashes {
            let mut indexed = $crate::schema::token_search_index::table
                .filter($crate::schema::token_search_index::tenant_id.eq(&p.tenant))
                .filter($crate::schema::token_search_index::hash.eq(hash))
                .select($crate::schema::token_search_index::token_id)
                .into_boxed();
            if let Some(containers) = &p.containers {
                indexed = indexed
                    .filter($crate::schema::token_search_index::container.eq_any(containers));
            }
            q = q.filter(tokens::id.eq_any(indexed));
        }
        if let Some(containers) = &p.containers {
            q = q.filter(tokens::container.eq_any(containers));
        }
        q
    }};
}
pub(super) use with_token_criteria;

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
pub(super) use searched_tokens;

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
pub(super) use searched_by_pair;

/// The distinct containers of the tokens the boxed query `$q` finds, loaded on `$conn`.
macro_rules! distinct_containers {
    ($q:expr, $conn:expr) => {
        $q.select(tokens::container)
            .distinct()
            .load::<String>($conn)
            .await
            .db()
    };
}
pub(super) use distinct_containers;

/// Container paths read back from the `container` column.
pub(super) fn parse_containers(raw: &[String]) -> Result<Vec<Container>, StoreError> {
    raw.iter()
        .map(|c| {
            Container::parse(c).map_err(|_| StoreError::Corrupt(format!("invalid container `{c}`")))
        })
        .collect()
}

/// The empty page, when `scope` admits no container: answered without asking the database.
pub(super) fn empty_page(scope: &ContainerScope, page: PageRequest) -> Option<Page<StoredToken>> {
    matches!(scope, ContainerScope::Only(cs) if cs.is_empty()).then_some(Page {
        items: vec![],
        total_items: 0,
        request: page,
    })
}
