//! Tenant data keys, unwrapped once and kept in memory.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use crate::{
    crypto::{self, CryptoError, DataKey},
    cursor::{CursorKey, CURSOR_KEY},
    custody::{KeyCustody, WrapPurpose},
    error::{Resource, VaultError},
    ids::TenantId,
    lookup::{LookupKey, PROXY_KEY_LOOKUP},
    store::{StoreError, StoredTenant, TenantStore},
};

/// Holds the key custody (plus, during a rotation, the previous ones), a cache of unwrapped
/// data keys, the proxy-key lookup key and the cursor key. No key changes once written (a
/// rotation re-wraps the same key), so the caches need no invalidation.
pub(crate) struct Keyring {
    master: Arc<dyn KeyCustody>,
    previous: Vec<Arc<dyn KeyCustody>>,
    cache: RwLock<HashMap<TenantId, Arc<DataKey>>>,
    lookup: RwLock<Option<Arc<LookupKey>>>,
    cursor: RwLock<Option<Arc<CursorKey>>>,
}

impl Keyring {
    pub(crate) fn new(master: Arc<dyn KeyCustody>, previous: Vec<Arc<dyn KeyCustody>>) -> Self {
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
                let wrapped = self
                    .master
                    .wrap(WrapPurpose::VaultKey(name), fresh.as_ref())
                    .await?;
                store.insert_vault_key(name, &wrapped).await?;
                store.get_vault_key(name).await?.ok_or_else(|| {
                    StoreError::Backend(format!("the vault key {name} was not stored"))
                })?
            }
        };
        Ok(self
            .unwrap_any(WrapPurpose::VaultKey(name), &wrapped)
            .await?)
    }

    /// Unwraps with the current custody, else with a previous one (a key not yet re-wrapped).
    /// When none opens it, an unreachable custody is reported before a refusal.
    async fn unwrap_any(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, CryptoError> {
        let mut failed = match self.master.unwrap(purpose, wrapped).await {
            Ok(plain) => return Ok(plain),
            Err(e) => e,
        };
        for old in &self.previous {
            match old.unwrap(purpose, wrapped).await {
                Ok(plain) => return Ok(plain),
                // An outage is what to report, not a refusal: it may be the custody that opens
                // the key.
                Err(e @ CryptoError::CustodyUnavailable(_)) => failed = e,
                Err(_) => {}
            }
        }
        Err(failed)
    }

    /// `wrapped` re-wrapped by the current custody, or `None` when it already wraps it. Fails
    /// when no configured custody opens it, or the current one cannot be reached.
    async fn rewrap_any(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<Option<Vec<u8>>, CryptoError> {
        let first = match self.master.unwrap(purpose, wrapped).await {
            Ok(_) => return Ok(None),
            Err(e @ CryptoError::CustodyUnavailable(_)) => return Err(e),
            Err(e) => e,
        };
        let mut failed = first;
        for old in &self.previous {
            match old.unwrap(purpose, wrapped).await {
                Ok(plain) => return Ok(Some(self.master.wrap(purpose, &plain).await?)),
                Err(e @ CryptoError::CustodyUnavailable(_)) => failed = e,
                Err(_) => {}
            }
        }
        Err(failed)
    }

    /// The vault key `name` re-wrapped by the current custody, or `None` when it already
    /// wraps it.
    pub(crate) async fn rewrap_vault_key(
        &self,
        name: &str,
        wrapped: &[u8],
    ) -> Result<Option<Vec<u8>>, VaultError> {
        Ok(self
            .rewrap_any(WrapPurpose::VaultKey(name), wrapped)
            .await?)
    }

    /// A new random data key for `tenant`, wrapped by the current custody.
    pub(crate) async fn new_wrapped_data_key(
        &self,
        tenant: TenantId,
    ) -> Result<Vec<u8>, VaultError> {
        let fresh = crypto::random_key();
        Ok(self
            .master
            .wrap(WrapPurpose::DataKey(tenant), fresh.as_ref())
            .await?)
    }

    /// What the current custody is, for reports.
    pub(crate) fn describe(&self) -> String {
        self.master.describe()
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
        let key = Arc::new(self.unwrap_uncached(&stored).await?);
        self.cache
            .write()
            .map_err(poisoned)?
            .insert(tenant, key.clone());
        Ok(key)
    }

    /// Unwraps `stored`'s data key and keeps it, as [`Keyring::data_key`] would.
    pub(crate) async fn hold(&self, stored: &StoredTenant) -> Result<(), VaultError> {
        if self
            .cache
            .read()
            .map_err(poisoned)?
            .contains_key(&stored.tenant.id)
        {
            return Ok(());
        }
        let key = Arc::new(self.unwrap_uncached(stored).await?);
        self.cache
            .write()
            .map_err(poisoned)?
            .insert(stored.tenant.id, key);
        Ok(())
    }

    /// Forgets `tenant`'s data key (its keys were destroyed): the next use reads the store.
    pub(crate) fn forget(&self, tenant: TenantId) -> Result<(), VaultError> {
        self.cache.write().map_err(poisoned)?.remove(&tenant);
        Ok(())
    }

    /// Unwraps `stored`'s data key with the current custody, else with a previous one. A
    /// tenant whose keys were destroyed (being deleted) is not found.
    pub(crate) async fn unwrap_uncached(
        &self,
        stored: &StoredTenant,
    ) -> Result<DataKey, VaultError> {
        if stored.wrapped_data_key.is_empty() {
            return Err(VaultError::NotFound(Resource::Tenant));
        }
        let purpose = WrapPurpose::DataKey(stored.tenant.id);
        let plain = self.unwrap_any(purpose, &stored.wrapped_data_key).await?;
        if plain.len() != 32 {
            return Err(CryptoError::Malformed.into());
        }
        Ok(DataKey::from_bytes(&plain)?)
    }

    /// `stored`'s wrapped key re-wrapped by the current custody, or `None` when it already
    /// wraps it (or was destroyed: the tenant is being deleted).
    pub(crate) async fn rewrap(
        &self,
        stored: &StoredTenant,
    ) -> Result<Option<Vec<u8>>, VaultError> {
        if stored.wrapped_data_key.is_empty() {
            return Ok(None);
        }
        let purpose = WrapPurpose::DataKey(stored.tenant.id);
        Ok(self.rewrap_any(purpose, &stored.wrapped_data_key).await?)
    }
}

fn poisoned<T>(_: T) -> VaultError {
    VaultError::Store(StoreError::Backend("key cache lock poisoned".into()))
}
