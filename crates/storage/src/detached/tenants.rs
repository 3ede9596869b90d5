//! Tenants and their wrapped keys: [`TenantStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{StoreError, StoredApplication, StoredTenant, TenantStore};
use tessera_domain::TenantId;

detached! {
    TenantStore {
        spawned fn insert_tenant_with_admin(tenant: &StoredTenant, admin: &StoredApplication) -> ();
        caller fn get_tenant(id: TenantId) -> Option<StoredTenant>;
        spawned fn first_tenant() -> Option<StoredTenant>;
        spawned fn list_tenants() -> Vec<StoredTenant>;
        spawned fn replace_wrapped_data_key(tenant: TenantId, expected: &[u8], new: &[u8]) -> bool;
        spawned fn destroy_tenant_keys(tenant: TenantId) -> bool;
        spawned fn delete_tenant(tenant: TenantId) -> bool;
        caller fn get_vault_key(name: &str) -> Option<Vec<u8>>;
        spawned fn insert_vault_key(name: &str, wrapped: &[u8]) -> ();
        spawned fn replace_vault_key(name: &str, expected: &[u8], new: &[u8]) -> bool;
    }
}
