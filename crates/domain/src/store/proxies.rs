//! Proxies as stored: every secret sealed.

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::{
    ids::{ApplicationId, ProxyId, TenantId},
    pagination::{Page, PageRequest},
    secret::Secret,
};

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
