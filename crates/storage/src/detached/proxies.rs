//! Proxies: [`ProxyStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{
    ProxyFilter, ProxyStore, SealedProxySecrets, StoreError, StoredProxy, UnsealedProxy,
};
use tessera_domain::{ApplicationId, Page, PageRequest, ProxyId, TenantId};

detached! {
    ProxyStore {
        spawned fn insert_proxy(proxy: &StoredProxy) -> ();
        caller fn get_proxy(tenant: TenantId, id: ProxyId) -> Option<StoredProxy>;
        caller fn find_proxy_by_key(key_lookup: &[u8; 32]) -> Option<StoredProxy>;
        spawned fn list_proxies(tenant: TenantId, filter: &ProxyFilter, page: PageRequest) -> Page<StoredProxy>;
        spawned fn update_proxy(proxy: &StoredProxy) -> bool;
        spawned fn unsealed_proxies(limit: u32) -> Vec<UnsealedProxy>;
        spawned fn seal_proxy(tenant: TenantId, id: ProxyId, sealed: &SealedProxySecrets) -> bool;
        spawned fn purge_unsealed() -> ();
        spawned fn delete_proxy(tenant: TenantId, id: ProxyId) -> bool;
        spawned fn proxies_using_application(tenant: TenantId, application: ApplicationId, limit: u32) -> Vec<(ProxyId, String)>;
    }
}
