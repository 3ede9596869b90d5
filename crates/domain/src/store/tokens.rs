//! Tokens as stored (data encrypted), and how they are listed, searched and changed.

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::{
    binding::Destinations,
    container::Container,
    ids::{ApplicationId, TenantId, TokenId},
    metadata::Metadata,
    pagination::{Page, PageRequest},
    token::{SearchHash, TokenType},
};

/// Where a page ended: the last token's creation time and id. The next page holds the tokens
/// strictly before it in the walk's order (`created_at`, then id, both descending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// The token's creation time, as stored.
    pub created_at: OffsetDateTime,
    /// The token's id.
    pub id: TokenId,
}

/// A token as stored: data encrypted.
#[derive(Debug, Clone)]
pub struct StoredToken {
    /// Identifier.
    pub id: TokenId,
    /// Owning tenant.
    pub tenant_id: TenantId,
    /// Type.
    pub token_type: TokenType,
    /// Container.
    pub container: Container,
    /// Non-sensitive pairs.
    pub metadata: Metadata,
    /// Encrypted data (see [`crate::crypto`]).
    pub ciphertext: Vec<u8>,
    /// Creating application.
    pub created_by: ApplicationId,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: ApplicationId,
    /// Last modification time.
    pub modified_at: OffsetDateTime,
    /// Keyed hash of the data, hex; empty for a row written before fingerprints, until
    /// [`crate::Vault::backfill_fingerprints`] computes it.
    pub fingerprint: String,
    /// Expiry, if any.
    pub expires_at: Option<OffsetDateTime>,
    /// Where the data may be sent, if bound (not secret: stored in clear).
    pub destinations: Option<Destinations>,
    /// The search index templates its create or last update named (`None`: the type's
    /// defaults, which are never stored).
    pub search_indexes: Option<Vec<String>>,
    /// The fingerprint expression its create or last update named (`None`: the type's).
    pub fingerprint_expression: Option<String>,
    /// The keyed hashes of its search index values ([`crate::crypto::DataKey::search_hash`]),
    /// written with the row; rows read back leave it empty.
    pub search_hashes: Vec<SearchHash>,
    /// Whether its sealed data may hold a card's CVC, which the sweep removes once the
    /// retention has passed (docs/operations.md, "CVC retention"). Every card stored before
    /// this mark existed carries it.
    pub holds_cvc: bool,
    /// Its own mask, sealed under the tenant's data key and bound to the token
    /// ([`crate::token::seal_mask`]); `None`: its type's.
    pub mask: Option<Vec<u8>>,
}

impl StoredToken {
    /// Whether the token is still live at `now` (not expired).
    pub fn is_live_at(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }
}

/// What a token equal to a new one has for `deduplicate_token` (docs/api.md, "Fingerprints and
/// deduplication"): the same type, container, fingerprint expression and fingerprint. The
/// expression is part of it so that a token cannot claim another's value by an expression
/// of its own: a fingerprint is compared only with those computed the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duplicate<'a> {
    /// The token type.
    pub token_type: TokenType,
    /// The container.
    pub container: &'a Container,
    /// The fingerprint expression the token was given (`None`: its type's).
    pub fingerprint_expression: Option<&'a str>,
    /// The fingerprint.
    pub fingerprint: &'a str,
}

/// Narrows a token list. Empty vectors mean "no filter"; all given filters must hold (AND).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenFilter {
    /// Only tokens live (not expired) at this time; the vault always sets it.
    pub live_at: Option<OffsetDateTime>,
    /// Only children of this token (listed in the children's page order).
    pub parent: Option<TokenId>,
    /// Only these ids.
    pub ids: Vec<TokenId>,
    /// Only these types.
    pub types: Vec<TokenType>,
    /// Only tokens whose metadata has every one of these exact pairs.
    pub metadata: Vec<(String, String)>,
}

/// The criteria of `POST /tokens/search` and of cursor pages (AND), newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSearch {
    /// Only tokens live (not expired) at this time.
    pub live_at: Option<OffsetDateTime>,
    /// Only these ids (any when empty).
    pub ids: Vec<TokenId>,
    /// Only tokens whose metadata has every one of these exact pairs.
    pub metadata: Vec<(String, String)>,
    /// Only these types (any when empty).
    pub types: Vec<TokenType>,
    /// Only tokens with this fingerprint.
    pub fingerprint: Option<String>,
    /// Only tokens whose container starts with this path.
    pub container_prefix: Option<Container>,
    /// Only tokens created strictly after this time.
    pub created_after: Option<OffsetDateTime>,
    /// Only tokens created strictly before this time.
    pub created_before: Option<OffsetDateTime>,
    /// Only tokens bound with every one of these patterns (lower-cased, as stored).
    pub destinations: Vec<String>,
    /// `data:` terms as written: only tokens one of whose search index values equals each.
    /// The vault turns them into [`TokenSearch::data_hashes`] before a store sees the search.
    pub data: Vec<crate::secret::Secret<String>>,
    /// The keyed hashes of the `data:` terms: only tokens with an index value of each.
    pub data_hashes: Vec<SearchHash>,
}

/// A token's new state, written by [`TokenRecords::update_token`](super::TokenRecords::update_token).
#[derive(Debug, Clone)]
pub struct TokenUpdate {
    /// The token's tenant.
    pub tenant_id: TenantId,
    /// The token.
    pub id: TokenId,
    /// The token's creation time (unchanged; copied into its metadata rows).
    pub created_at: OffsetDateTime,
    /// The token's container (unchanged; copied into its search index rows).
    pub container: Container,
    /// The `modified_at` it was read with: the write happens only if it is still that
    /// (optimistic concurrency; the caller re-reads and retries otherwise).
    pub expected_modified_at: OffsetDateTime,
    /// The write happens only if the token is still live at this time.
    pub live_at: OffsetDateTime,
    /// New metadata (all pairs).
    pub metadata: Metadata,
    /// New ciphertext, when the data changed.
    pub ciphertext: Option<Vec<u8>>,
    /// New fingerprint, when the data changed.
    pub fingerprint: Option<String>,
    /// New expiry.
    pub expires_at: Option<OffsetDateTime>,
    /// New binding, when it changed (`Some(None)`: unbound).
    pub destinations: Option<Option<Destinations>>,
    /// New search index templates and the hashes of their values, when the data or the
    /// templates changed (`Some((None, …))`: the type's defaults).
    pub search: Option<(Option<Vec<String>>, Vec<SearchHash>)>,
    /// New fingerprint expression, when it changed (`Some(None)`: the type's).
    pub fingerprint_expression: Option<Option<String>>,
    /// Whether the new data holds a card's CVC, when the data changed.
    pub holds_cvc: Option<bool>,
    /// Its new sealed mask, when it changed (`Some(None)`: its type's).
    pub mask: Option<Option<Vec<u8>>>,
    /// Write only if the row is still marked as holding a CVC: the CVC sweep's condition,
    /// which leaves `modified_at` as it was, so that of several sweeps one writes.
    pub only_if_holding_cvc: bool,
    /// Modifying application.
    pub modified_by: ApplicationId,
    /// Modification time.
    pub modified_at: OffsetDateTime,
}

/// Which containers a list may return: the caller's readable set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerScope {
    /// Every container.
    All,
    /// Only these containers (possibly none).
    Only(Vec<Container>),
}

/// New tokens: their rows, metadata and search index entries.
#[async_trait]
pub trait TokenInserts: Send + Sync {
    /// Inserts a token with its metadata, in one transaction.
    async fn insert_token(&self, token: &StoredToken) -> Result<(), StoreError>;
    /// Inserts several tokens with their metadata in one transaction: all or none.
    async fn insert_tokens(&self, tokens: &[StoredToken]) -> Result<(), StoreError>;
}

/// Tokens by id: point reads, the optimistic update, delete, and the duplicate lookup.
#[async_trait]
pub trait TokenRecords: Send + Sync {
    /// One token of `tenant`.
    async fn get_token(
        &self,
        tenant: TenantId,
        id: TokenId,
    ) -> Result<Option<StoredToken>, StoreError>;
    /// The tokens of `tenant` among `ids`, each once and in no particular order (absent ids,
    /// and other tenants' ids, are simply missing); in one round trip where the backend allows.
    async fn get_tokens(
        &self,
        tenant: TenantId,
        ids: &[TokenId],
    ) -> Result<Vec<StoredToken>, StoreError>;
    /// Writes `update` if the token still has its expected `modified_at` and is live; `false`
    /// otherwise (changed concurrently, expired or gone: the caller re-reads).
    async fn update_token(&self, update: &TokenUpdate) -> Result<bool, StoreError>;
    /// Deletes a token with its metadata and its associations in both directions (the tokens
    /// at the other end remain); `false` when absent.
    async fn delete_token(&self, tenant: TenantId, id: TokenId) -> Result<bool, StoreError>;
    /// The oldest token of `tenant` live at `live_at` that `duplicate` describes.
    async fn find_duplicate_token(
        &self,
        tenant: TenantId,
        duplicate: &Duplicate<'_>,
        live_at: OffsetDateTime,
    ) -> Result<Option<StoredToken>, StoreError>;
}

/// `GET /tokens` and a parent's children: a filtered list and its containers.
#[async_trait]
pub trait TokenListing: Send + Sync {
    /// The distinct containers of `tenant`'s tokens that pass `filter`, so the caller's rules can
    /// be evaluated per container before listing.
    async fn token_containers(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
    ) -> Result<Vec<Container>, StoreError>;
    /// A page of `tenant`'s tokens passing `filter` within `scope`, ordered by `created_at`
    /// then `id`; the total counts the same set.
    async fn list_tokens(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError>;
}

/// `POST /tokens/search`: a page of a search, its containers, and cursor walks.
#[async_trait]
pub trait TokenSearching: Send + Sync {
    /// The distinct containers of `tenant`'s tokens that pass `search` (ignoring any scope).
    async fn search_containers(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
    ) -> Result<Vec<Container>, StoreError>;
    /// A page of `tenant`'s tokens passing `search` within `scope`, newest first (`created_at`
    /// then `id`, both descending); the total counts the same set.
    async fn search_tokens(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError>;
    /// Up to `limit` of `tenant`'s tokens passing `search` within `scope`, strictly after
    /// `after` (when given) in the order `created_at` then `id`, both descending: one keyset
    /// page of a cursor walk (docs/api.md "Cursor pages"). Nothing is counted.
    async fn search_tokens_after(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
        scope: &ContainerScope,
        after: Option<Position>,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError>;
}

/// Upkeep across tenants: the sweep of expired tokens, the CVC sweep's reads, and the
/// fingerprint backfill.
#[async_trait]
pub trait TokenUpkeep: Send + Sync {
    /// Deletes up to `limit` tokens (of any tenant) expired at `now`, with their metadata and
    /// associations; returns the ones it deleted. Safe to run from several processes at once: a token
    /// is deleted only if it is still expired when the delete runs.
    async fn delete_expired_tokens(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<(TenantId, TokenId)>, StoreError>;
    /// Up to `limit` tokens (of any tenant) whose data may hold a CVC ([`StoredToken::holds_cvc`])
    /// and that were created at or before `created_by`, oldest first.
    async fn tokens_holding_cvc(
        &self,
        created_by: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError>;
    /// Up to `limit` tokens (of any tenant) written before fingerprints existed.
    async fn unfingerprinted_tokens(&self, limit: u32) -> Result<Vec<StoredToken>, StoreError>;
    /// Sets a legacy token's fingerprint if it still has none.
    async fn set_token_fingerprint(
        &self,
        tenant: TenantId,
        id: TokenId,
        fingerprint: &str,
    ) -> Result<(), StoreError>;
}

/// Tokens: every part above. Implemented for every type with all of them.
pub trait TokenStore:
    TokenInserts + TokenRecords + TokenListing + TokenSearching + TokenUpkeep
{
}

impl<T> TokenStore for T where
    T: TokenInserts + TokenRecords + TokenListing + TokenSearching + TokenUpkeep
{
}
