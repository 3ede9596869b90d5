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

/// Holds the master key (plus, during a rotation, the previous ones) and a cache of unwrapped
/// data keys. Data keys never change once written (a rotation re-wraps the same key), so the
/// cache needs no invalidation.
pub(crate) struct Keyring {
    master: MasterKey,
    previous: Vec<MasterKey>,
    cache: RwLock<HashMap<TenantId, Arc<DataKey>>>,
}

impl Keyring {
    pub(crate) fn new(master: MasterKey, previous: Vec<MasterKey>) -> Self {
        Self {
            master,
            previous,
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

    /// Unwraps with the master key, else with a previous one (a tenant not yet re-wrapped).
    pub(crate) fn unwrap_uncached(&self, stored: &StoredTenant) -> Result<DataKey, VaultError> {
        let (id, wrapped) = (stored.tenant.id, &stored.wrapped_data_key);
        match self.master.unwrap_data_key(id, wrapped) {
            Ok(key) => Ok(key),
            Err(first) => self
                .previous
                .iter()
                .find_map(|old| old.unwrap_data_key(id, wrapped).ok())
                .ok_or(VaultError::Crypto(first)),
        }
    }

    /// `stored`'s wrapped key re-wrapped under the master key, or `None` when the master key
    /// already wraps it. Fails when no configured key opens it.
    pub(crate) fn rewrap(&self, stored: &StoredTenant) -> Result<Option<Vec<u8>>, VaultError> {
        let (id, wrapped) = (stored.tenant.id, &stored.wrapped_data_key);
        let Err(first) = self.master.unwrap_data_key(id, wrapped) else {
            return Ok(None);
        };
        self.previous
            .iter()
            .find_map(|old| old.rewrap_data_key(id, wrapped, &self.master).ok())
            .map(Some)
            .ok_or(VaultError::Crypto(first))
    }
}

fn poisoned<T>(_: T) -> VaultError {
    VaultError::Store(StoreError::Backend("key cache lock poisoned".into()))
}
