//! Storage ports. The storage crate implements these for SQLite and PostgreSQL; an embedding
//! program may implement them for anything else.
//!
//! Every method but the credential lookups and the start-up and rotation reads of all tenants
//! ([`TenantStore::first_tenant`], [`TenantStore::list_tenants`]) takes the tenant id
//! and must confine itself to that tenant: that is what keeps tenants apart.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::{
    api_key::ApiKeyHash,
    application::Application,
    container::Container,
    ids::{ApplicationId, ProxyId, TenantId, TokenId},
    metadata::Metadata,
    pagination::{Page, PageRequest},
    secret::Secret,
    tenant::Tenant,
    token::TokenType,
};

/// Why the store failed. Messages never include secret values.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or a connection could not be had.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A uniqueness or foreign-key constraint refused the write.
    #[error("conflicting write: {0}")]
    Conflict(String),
    /// A statement ran past the configured time limit (`--query-timeout`) and was stopped.
    #[error("the query ran past the time limit: {0}")]
    Timeout(String),
    /// A stored row could not be understood.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// Any other database error.
    #[error("database error: {0}")]
    Backend(String),
}

/// A tenant as stored: with its wrapped data key.
#[derive(Debug, Clone)]
pub struct StoredTenant {
    /// The tenant.
    pub tenant: Tenant,
    /// Its data key, wrapped by the master key.
    pub wrapped_data_key: Vec<u8>,
}

/// An application as stored: with the hash of its current key.
#[derive(Debug, Clone)]
pub struct StoredApplication {
    /// The application.
    pub application: Application,
    /// SHA-256 of its API key.
    pub key_hash: ApiKeyHash,
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
    pub destinations: Option<crate::binding::Destinations>,
}

impl StoredToken {
    /// Whether the token is still live at `now` (not expired).
    pub fn is_live_at(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }
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

/// The criteria of `POST /tokens/search` (AND), newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSearch {
    /// Only tokens live (not expired) at this time.
    pub live_at: Option<OffsetDateTime>,
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
}

/// A token's new state, written by [`TokenStore::update_token`].
#[derive(Debug, Clone)]
pub struct TokenUpdate {
    /// The token's tenant.
    pub tenant_id: TenantId,
    /// The token.
    pub id: TokenId,
    /// The token's creation time (unchanged; copied into its metadata rows).
    pub created_at: OffsetDateTime,
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
    pub destinations: Option<Option<crate::binding::Destinations>>,
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

/// Tenants and their keys.
#[async_trait]
pub trait TenantStore: Send + Sync {
    /// Writes a tenant and its first (admin) application in one transaction.
    async fn insert_tenant_with_admin(
        &self,
        tenant: &StoredTenant,
        admin: &StoredApplication,
    ) -> Result<(), StoreError>;
    /// One tenant by id.
    async fn get_tenant(&self, id: TenantId) -> Result<Option<StoredTenant>, StoreError>;
    /// The oldest tenant, if any: used at start-up to bootstrap an empty database.
    async fn first_tenant(&self) -> Result<Option<StoredTenant>, StoreError>;
    /// Every tenant, oldest first (for master-key rotation).
    async fn list_tenants(&self) -> Result<Vec<StoredTenant>, StoreError>;
    /// Replaces `tenant`'s wrapped data key with `new` if it is still `expected`; `false` when
    /// it was not (changed concurrently, or no such tenant).
    async fn replace_wrapped_data_key(
        &self,
        tenant: TenantId,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError>;
    /// The deployment-wide key `name`, wrapped by the master key.
    async fn get_vault_key(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Stores `wrapped` as the key `name` unless one exists (the first writer wins; read it
    /// back after).
    async fn insert_vault_key(&self, name: &str, wrapped: &[u8]) -> Result<(), StoreError>;
    /// Replaces the wrapped key `name` with `new` if it is still `expected`.
    async fn replace_vault_key(
        &self,
        name: &str,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError>;
}

/// Applications and their key hashes.
#[async_trait]
pub trait ApplicationStore: Send + Sync {
    /// Inserts a new application.
    async fn insert_application(&self, app: &StoredApplication) -> Result<(), StoreError>;
    /// One application of `tenant`.
    async fn get_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<Option<Application>, StoreError>;
    /// The application whose key hashes to `hash`, in whatever tenant.
    async fn find_application_by_key_hash(
        &self,
        hash: &ApiKeyHash,
    ) -> Result<Option<StoredApplication>, StoreError>;
    /// A page of `tenant`'s applications, oldest first.
    async fn list_applications(
        &self,
        tenant: TenantId,
        page: PageRequest,
    ) -> Result<Page<Application>, StoreError>;
    /// Replaces name, type, permissions, rules and `modified_*`; `false` when absent.
    async fn update_application(&self, app: &Application) -> Result<bool, StoreError>;
    /// Replaces the key hash and `modified_*`; `false` when absent.
    async fn replace_application_key(
        &self,
        tenant: TenantId,
        id: ApplicationId,
        hash: &ApiKeyHash,
        modified_by: ApplicationId,
        modified_at: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Deletes; `false` when absent.
    async fn delete_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<bool, StoreError>;
}

/// Tokens.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// Inserts a token with its metadata, in one transaction.
    async fn insert_token(&self, token: &StoredToken) -> Result<(), StoreError>;
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
    /// Deletes a token with its metadata and its associations in both directions (the tokens
    /// at the other end remain); `false` when absent.
    async fn delete_token(&self, tenant: TenantId, id: TokenId) -> Result<bool, StoreError>;
    /// Inserts several tokens with their metadata in one transaction: all or none.
    async fn insert_tokens(&self, tokens: &[StoredToken]) -> Result<(), StoreError>;
    /// Writes `update` if the token still has its expected `modified_at` and is live; `false`
    /// otherwise (changed concurrently, expired or gone: the caller re-reads).
    async fn update_token(&self, update: &TokenUpdate) -> Result<bool, StoreError>;
    /// The oldest token of `tenant` live at `live_at` with this type, container and
    /// fingerprint.
    async fn find_duplicate_token(
        &self,
        tenant: TenantId,
        token_type: TokenType,
        container: &Container,
        fingerprint: &str,
        live_at: OffsetDateTime,
    ) -> Result<Option<StoredToken>, StoreError>;
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
    /// Deletes up to `limit` tokens (of any tenant) expired at `now`, with their metadata and
    /// associations; returns how many. Safe to run from several processes at once: a token
    /// is deleted only if it is still expired when the delete runs.
    async fn delete_expired_tokens(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<u64, StoreError>;
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

/// An `Idempotency-Key` as stored: which request first used it, and its answer once known.
#[derive(Debug, Clone)]
pub struct IdempotencyRecord {
    /// SHA-256 over the first request's method, path and body.
    pub request_hash: [u8; 32],
    /// That request's answer, sealed with the tenant's data key; `None` while it runs.
    pub response_sealed: Option<Vec<u8>>,
    /// When the key was first used.
    pub created_at: OffsetDateTime,
}

/// Which key: per tenant and application (two applications never share keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyScope {
    /// Tenant.
    pub tenant_id: TenantId,
    /// Calling application.
    pub application_id: ApplicationId,
    /// The key as sent.
    pub key: String,
}

/// Stored `Idempotency-Key`s.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Records `scope` as in use by the request hashing to `request_hash`, unless it already
    /// is: `None` when this call claimed it, else the existing record.
    async fn claim_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        request_hash: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Stores the sealed answer of the request that claimed `scope`.
    async fn complete_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        response_sealed: &[u8],
    ) -> Result<(), StoreError>;
    /// Forgets `scope` if it was first used at `created_at` (a failed first request, so a
    /// retry may run again; or an expired key, so it may be claimed anew).
    async fn release_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        created_at: OffsetDateTime,
    ) -> Result<(), StoreError>;
    /// Deletes keys first used before `before`; returns how many.
    async fn delete_idempotency_keys_before(
        &self,
        before: OffsetDateTime,
    ) -> Result<u64, StoreError>;
}

/// A parent → child link to be written. The child's creation time and type are copied into
/// the link so that listing a parent's children in page order, filtered by type, is answered
/// from one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAssociation {
    /// Tenant of both tokens.
    pub tenant_id: TenantId,
    /// The parent.
    pub parent_id: TokenId,
    /// The child.
    pub child_id: TokenId,
    /// The child's `created_at`.
    pub child_created_at: OffsetDateTime,
    /// The child's type.
    pub child_type: TokenType,
    /// When the link was made.
    pub created_at: OffsetDateTime,
}

/// Parent → child links between tokens. Listing children goes through
/// [`TokenStore::list_tokens`] with [`TokenFilter::parent`] set.
#[async_trait]
pub trait AssociationStore: Send + Sync {
    /// Links parent → child; linking an existing pair again changes nothing.
    async fn insert_association(&self, link: &NewAssociation) -> Result<(), StoreError>;
    /// Removes a link; `false` when there was none.
    async fn delete_association(
        &self,
        tenant: TenantId,
        parent: TokenId,
        child: TokenId,
    ) -> Result<bool, StoreError>;
    /// Writes a new token (with its metadata) and its link to the parent in one transaction,
    /// so a failure leaves no orphan token.
    async fn insert_child_token(
        &self,
        child: &StoredToken,
        link: &NewAssociation,
    ) -> Result<(), StoreError>;
    /// The parents of `child` (at most `limit`, in the order the links were made): the
    /// reverse of a children list, answered from the `(tenant, child)` index.
    async fn parent_ids(
        &self,
        tenant: TenantId,
        child: TokenId,
        limit: u32,
    ) -> Result<Vec<TokenId>, StoreError>;
}

/// A proxy as stored: every secret sealed with the tenant's data key, and the invocation key
/// findable only through its keyed lookup hash ([`crate::lookup`]). Nothing here is plaintext.
#[derive(Debug, Clone)]
pub struct StoredProxy {
    /// Identifier.
    pub id: ProxyId,
    /// Owning tenant.
    pub tenant_id: TenantId,
    /// Display name.
    pub name: String,
    /// `HMAC-SHA-256(lookup key, invocation key)`: how an invocation finds the proxy (globally
    /// unique).
    pub key_lookup: [u8; 32],
    /// The invocation key, sealed (the management API returns it).
    pub key_sealed: Vec<u8>,
    /// Destination URL.
    pub destination_url: String,
    /// Request transform source, sealed.
    pub request_transform_sealed: Option<Vec<u8>>,
    /// Response transform source, sealed.
    pub response_transform_sealed: Option<Vec<u8>>,
    /// Application for `req.svc`.
    pub application_id: Option<ApplicationId>,
    /// Encrypted configuration (see [`crate::crypto::DataKey::seal_record`]).
    pub configuration_ciphertext: Option<Vec<u8>>,
    /// Whether invocation needs an API key.
    pub require_auth: bool,
    /// Creating application.
    pub created_by: ApplicationId,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: ApplicationId,
    /// Last modification time.
    pub modified_at: OffsetDateTime,
}

/// A proxy row written before proxy secrets were sealed (migration `…000004`): its key and
/// transform code are still in clear, to be sealed once at start-up
/// ([`crate::Vault::seal_legacy_proxies`]).
#[derive(Debug)]
pub struct UnsealedProxy {
    /// Owning tenant.
    pub tenant_id: TenantId,
    /// Identifier.
    pub id: ProxyId,
    /// The invocation key in clear.
    pub key: Secret<String>,
    /// Request transform source in clear.
    pub request_transform: Option<Secret<String>>,
    /// Response transform source in clear.
    pub response_transform: Option<Secret<String>>,
}

/// The sealed forms that replace an [`UnsealedProxy`]'s clear columns.
#[derive(Debug, Clone)]
pub struct SealedProxySecrets {
    /// Lookup hash of the key.
    pub key_lookup: [u8; 32],
    /// The key, sealed.
    pub key_sealed: Vec<u8>,
    /// Request transform, sealed.
    pub request_transform_sealed: Option<Vec<u8>>,
    /// Response transform, sealed.
    pub response_transform_sealed: Option<Vec<u8>>,
}

/// Narrows a proxy list (AND).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyFilter {
    /// Only these ids.
    pub ids: Vec<ProxyId>,
    /// Only names matching this `LIKE` pattern over the lowercased name (escape character
    /// `\`); see [`crate::proxy::name_like_pattern`].
    pub name_like: Option<String>,
}

/// Proxies.
#[async_trait]
pub trait ProxyStore: Send + Sync {
    /// Inserts a proxy; a clashing key is a [`StoreError::Conflict`].
    async fn insert_proxy(&self, proxy: &StoredProxy) -> Result<(), StoreError>;
    /// One proxy of `tenant`.
    async fn get_proxy(
        &self,
        tenant: TenantId,
        id: ProxyId,
    ) -> Result<Option<StoredProxy>, StoreError>;
    /// The proxy whose key has this lookup hash, in whatever tenant.
    async fn find_proxy_by_key(
        &self,
        key_lookup: &[u8; 32],
    ) -> Result<Option<StoredProxy>, StoreError>;
    /// A page of `tenant`'s proxies passing `filter`, oldest first.
    async fn list_proxies(
        &self,
        tenant: TenantId,
        filter: &ProxyFilter,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, StoreError>;
    /// Replaces every field but id, tenant, key and `created_*`; `false` when absent.
    async fn update_proxy(&self, proxy: &StoredProxy) -> Result<bool, StoreError>;
    /// Up to `limit` proxies (of any tenant) whose secrets are still in clear.
    async fn unsealed_proxies(&self, limit: u32) -> Result<Vec<UnsealedProxy>, StoreError>;
    /// Writes the sealed forms of a legacy proxy's secrets and clears the clear ones, if the
    /// row is still unsealed; `false` when it was not (sealed by another process, or gone).
    async fn seal_proxy(
        &self,
        tenant: TenantId,
        id: ProxyId,
        sealed: &SealedProxySecrets,
    ) -> Result<bool, StoreError>;
    /// Makes sure the clear copies of sealed legacy proxies are gone from the storage itself,
    /// not only from what queries see (dead rows, freed pages).
    async fn purge_unsealed(&self) -> Result<(), StoreError>;
    /// Deletes; `false` when absent.
    async fn delete_proxy(&self, tenant: TenantId, id: ProxyId) -> Result<bool, StoreError>;
    /// Up to `limit` proxies of `tenant` that name `application` (id and name), oldest first.
    async fn proxies_using_application(
        &self,
        tenant: TenantId,
        application: ApplicationId,
        limit: u32,
    ) -> Result<Vec<(ProxyId, String)>, StoreError>;
}

pub use crate::audit::{AuditStore, BlockSpan, ChainAppend};

/// Liveness of the backing database.
#[async_trait]
pub trait HealthStore: Send + Sync {
    /// Round-trips a trivial query.
    async fn ping(&self) -> Result<(), StoreError>;
}

/// Everything the vault needs from storage.
pub trait Store:
    TenantStore
    + ApplicationStore
    + TokenStore
    + AssociationStore
    + ProxyStore
    + IdempotencyStore
    + AuditStore
    + HealthStore
{
}

impl<T> Store for T where
    T: TenantStore
        + ApplicationStore
        + TokenStore
        + AssociationStore
        + ProxyStore
        + IdempotencyStore
        + AuditStore
        + HealthStore
{
}
