//! Tenants and their keys, as stored.

use async_trait::async_trait;

use super::{applications::StoredApplication, StoreError};
use crate::{ids::TenantId, tenant::Tenant};

/// A tenant as stored: with its wrapped data key.
#[derive(Debug, Clone)]
pub struct StoredTenant {
    /// The tenant.
    pub tenant: Tenant,
    /// Its first data key (version 1), wrapped by the master key; [`RETIRED_FIRST_KEY`] once
    /// retired, empty once destroyed (the tenant is being deleted).
    pub wrapped_data_key: Vec<u8>,
    /// Its index keys, wrapped, from its first data-key rotation on; `None`: derived from the
    /// first data key.
    pub wrapped_index_keys: Option<Vec<u8>>,
}

/// What `wrapped_data_key` holds once the first data key is retired (docs/operations.md,
/// "Rotating data keys"): no wrapping is this short.
pub const RETIRED_FIRST_KEY: &[u8] = b"retired";

impl StoredTenant {
    /// Whether its keys were destroyed (it is being deleted).
    pub fn keys_destroyed(&self) -> bool {
        self.wrapped_data_key.is_empty()
    }

    /// Whether its first data key is still held (not retired, not destroyed).
    pub fn holds_first_key(&self) -> bool {
        !self.keys_destroyed() && self.wrapped_data_key != RETIRED_FIRST_KEY
    }
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
    /// Destroys `tenant`'s data keys (crypto-shredding: its rows stay, and nothing opens them),
    /// and makes sure the destroyed keys' bytes are gone from the database's files (docs/
    /// operations.md, "Deleting a tenant"); `false` when there is no such tenant.
    async fn destroy_tenant_keys(&self, tenant: TenantId) -> Result<bool, StoreError>;
    /// Deletes `tenant` and every row that belongs to it, its tokens in batches (its audit
    /// chain stays: ids and actions, no data); `false` when there is no such tenant.
    async fn delete_tenant(&self, tenant: TenantId) -> Result<bool, StoreError>;
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
