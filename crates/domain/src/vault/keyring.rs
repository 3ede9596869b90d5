//! Tenant data keys, unwrapped once and kept in memory.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use crate::{
    crypto::{self, CryptoError, DataKey, MasterKey},
    cursor::{CursorKey, CURSOR_KEY},
    error::{Resource, VaultError},
    ids::TenantId,
    lookup::{LookupKey, PROXY_KEY_LOOKUP},
    store::{StoreError, StoredTenant, TenantStore},
};

/// Holds the master key (plus, during a rotation, the previous ones), a cache of unwrapped
/// data keys, the proxy-key lookup key and the cursor key. No key changes once written (a
/// rotation re-wraps the same key), so the caches need no invalidation.
pub(crate) struct Keyring {
    master: MasterKey,
    previous: Vec<MasterKey>,
    cache: RwLock<HashMap<TenantId, Arc<DataKey>>>,
    lookup: RwLock<Option<Arc<LookupKey>>>,
    cursor: RwLock<Option<Arc<CursorKey>>>,
}

impl Keyring {
    pub(crate) fn new(master: MasterKey, previous: Vec<MasterKey>) -> Self {
        Self {
            master,
            previous,
            cache: RwLock::new(HashMap::new()),
            lookup: RwLock::new(None),
            cursor: RwLock::new(None),
        }
    }

    /// The proxy-key lookup key: cached, else read from the store, else created there (see
    /// [`Keyring::vault_key`]).
    pub(crate) async fn lookup_key(
        &self,
        store: &dyn TenantStore,
    ) -> Result<Arc<LookupKey>, VaultError> {
        if let Some(key) = self.lookup.read().map_err(poisoned)?.as_ref() {
            return Ok(key.clone());
        }
        let plain = self.vault_key(store, PROXY_KEY_LOOKUP).await?;
        let key = Arc::new(
            LookupKey::from_bytes(&plain).ok_or(VaultError::Crypto(CryptoError::Malformed))?,
        );
        *self.lookup.write().map_err(poisoned)? = Some(key.clone());
        Ok(key)
    }

    /// The key of cursor tags (docs/api.md "Cursor pages"): a vault key of its own, never a
    /// tenant data key, so rotating data keys leaves every walk valid. Cached like
    /// [`Keyring::lookup_key`].
    pub(crate) async fn cursor_key(
        &self,
        store: &dyn TenantStore,
    ) -> Result<Arc<CursorKey>, VaultError> {
        if let Some(key) = self.cursor.read().map_err(poisoned)?.as_ref() {
            return Ok(key.clone());
        }
        let plain = self.vault_key(store, CURSOR_KEY).await?;
        let key = Arc::new(
            CursorKey::from_bytes(&plain).ok_or(VaultError::Crypto(CryptoError::Malformed))?,
        );
        *self.cursor.write().map_err(poisoned)? = Some(key.clone());
        Ok(key)
    }

    /// The deployment-wide key `name`, unwrapped: read from the store, else created there
    /// (32 random bytes wrapped by the master key; the first process to write it wins, and
    /// every process then reads the same one).
    async fn vault_key(
        &self,
        store: &dyn TenantStore,
        name: &str,
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, VaultError> {
        let wrapped = match store.get_vault_key(name).await? {
            Some(w) => w,
            None => {
                let fresh = crypto::random_key();
                let wrapped = self.master.wrap_vault_key(name, fresh.as_ref())?;
                store.insert_vault_key(name, &wrapped).await?;
                store.get_vault_key(name).await?.ok_or_else(|| {
                    StoreError::Backend(format!("the vault key {name} was not stored"))
                })?
            }
        };
        self.unwrap_vault_key(name, &wrapped)
    }

    /// Unwraps a vault key with the master key, else a previous one.
    fn unwrap_vault_key(
        &self,
        name: &str,
        wrapped: &[u8],
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, VaultError> {
        match self.master.unwrap_vault_key(name, wrapped) {
            Ok(key) => Ok(key),
            Err(first) => self
                .previous
                .iter()
                .find_map(|old| old.unwrap_vault_key(name, wrapped).ok())
                .ok_or(VaultError::Crypto(first)),
        }
    }

    /// The vault key `name` re-wrapped under the master key, or `None` when the master key
    /// already wraps it. Fails when no configured key opens it.
    pub(crate) fn rewrap_vault_key(
        &self,
        name: &str,
        wrapped: &[u8],
    ) -> Result<Option<Vec<u8>>, VaultError> {
        let Err(first) = self.master.unwrap_vault_key(name, wrapped) else {
            return Ok(None);
        };
        self.previous
            .iter()
            .find_map(|old| old.rewrap_vault_key(name, wrapped, &self.master).ok())
            .map(Some)
            .ok_or(VaultError::Crypto(first))
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
