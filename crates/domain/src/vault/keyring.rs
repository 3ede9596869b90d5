//! Tenant data keys, unwrapped once and kept in memory.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use crate::{
    crypto::{DataKey, MasterKey},
    error::{Resource, VaultError},
    ids::TenantId,
    store::{StoreError, StoredTenant, TenantStore},
};

/// Holds the master key and a cache of unwrapped data keys. Data keys never change once
/// written, so the cache needs no invalidation.
pub(crate) struct Keyring {
    master: MasterKey,
    cache: RwLock<HashMap<TenantId, Arc<DataKey>>>,
}

impl Keyring {
    pub(crate) fn new(master: MasterKey) -> Self {
        Self {
            master,
            cache: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn master(&self) -> &MasterKey {
        &self.master
    }

    /// `tenant`'s data key, from the cache or unwrapped from the store.
    pub(crate) async fn data_key(
        &self,
        store: &dyn TenantStore,
        tenant: TenantId,
    ) -> Result<Arc<DataKey>, VaultError> {
        if let Some(key) = self.cache.read().map_err(poisoned)?.get(&tenant) {
            return Ok(key.clone());
        }
        let stored = store
            .get_tenant(tenant)
            .await?
            .ok_or(VaultError::NotFound(Resource::Tenant))?;
        let key = Arc::new(self.unwrap_uncached(&stored)?);
        self.cache
            .write()
            .map_err(poisoned)?
            .insert(tenant, key.clone());
        Ok(key)
    }

    pub(crate) fn unwrap_uncached(&self, stored: &StoredTenant) -> Result<DataKey, VaultError> {
        Ok(self
            .master
            .unwrap_data_key(stored.tenant.id, &stored.wrapped_data_key)?)
    }
}

fn poisoned<T>(_: T) -> VaultError {
    VaultError::Store(StoreError::Backend("key cache lock poisoned".into()))
}
