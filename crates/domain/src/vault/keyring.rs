//! The key-encrypting key's custodies, and the keys they open: tenants' data keys (every
//! version in use, refreshed from the store), the proxy-key lookup key and the cursor key.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use zeroize::Zeroizing;

use crate::{
    crypto::{self, CryptoError, DataKey},
    cursor::{CursorKey, CURSOR_KEY},
    custody::{KeyCustody, WrapPurpose},
    error::{Resource, VaultError},
    ids::TenantId,
    lookup::{LookupKey, PROXY_KEY_LOOKUP},
    store::{Store, StoreError, StoredKeyVersion, StoredTenant, TenantStore},
};

/// Holds the key custody (plus, during a rotation, the previous ones), a cache of unwrapped
/// data keys (checked against the store every [`KEY_REFRESH`]: a tenant's data key gains
/// versions), the proxy-key lookup key and the cursor key (which never change once written: a
/// rotation re-wraps the same key).
pub(crate) struct Keyring {
    master: Arc<dyn KeyCustody>,
    previous: Vec<Arc<dyn KeyCustody>>,
    cache: RwLock<HashMap<TenantId, Held>>,
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

    /// A deployment key of any length (a webhook signing key) wrapped by the current custody.
    pub(crate) async fn wrap_vault_key(
        &self,
        purpose: WrapPurpose<'_>,
        plain: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        self.master.wrap(purpose, plain).await
    }

    /// A deployment key wrapped by [`Keyring::wrap_vault_key`], unwrapped by whichever
    /// configured custody opens it.
    pub(crate) async fn unwrap_vault_key(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, CryptoError> {
        self.unwrap_any(purpose, wrapped).await
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

    /// `tenant`'s data keys, from the cache or unwrapped from the store. A cached entry older
    /// than [`KEY_REFRESH`] is checked against the store first (one read of the tenant and its
    /// versions): a version another process added is held from then on, a retired one dropped,
    /// and a tenant whose keys were destroyed is not found.
    pub(crate) async fn data_key(
        &self,
        store: &dyn Store,
        tenant: TenantId,
    ) -> Result<Arc<DataKey>, VaultError> {
        if let Some(held) = self.cache.read().map_err(poisoned)?.get(&tenant) {
            if held.loaded.elapsed() < KEY_REFRESH {
                return Ok(held.key.clone());
            }
        }
        let stored = store.get_tenant(tenant).await?;
        let Some(stored) = stored.filter(|s| !s.keys_destroyed()) else {
            self.forget(tenant)?;
            return Err(VaultError::NotFound(Resource::Tenant));
        };
        self.load(store, &stored).await
    }

    /// Unwraps `stored`'s data keys and keeps them, as [`Keyring::data_key`] would.
    pub(crate) async fn hold(
        &self,
        store: &dyn Store,
        stored: &StoredTenant,
    ) -> Result<(), VaultError> {
        self.load(store, stored).await.map(|_| ())
    }

    /// `stored`'s keys as the store has them now: the cached ones when nothing changed,
    /// else every held version unwrapped again.
    async fn load(
        &self,
        store: &dyn Store,
        stored: &StoredTenant,
    ) -> Result<Arc<DataKey>, VaultError> {
        let tenant = stored.tenant.id;
        // As of now: what is read below is at least this fresh (a slow unwrap must not make
        // an older view look newer).
        let read_at = Instant::now();
        let versions = store.data_key_versions(tenant).await?;
        let signature = signature(stored, &versions);
        if let Some(held) = self.cache.write().map_err(poisoned)?.get_mut(&tenant) {
            if held.signature == signature {
                held.loaded = held.loaded.max(read_at);
                return Ok(held.key.clone());
            }
        }
        let key = Arc::new(self.unwrap_versions(stored, &versions).await?);
        let mut cache = self.cache.write().map_err(poisoned)?;
        match cache.get(&tenant) {
            // Another load, read later than this one, got there first: keep it.
            Some(newer) if newer.loaded > read_at => Ok(newer.key.clone()),
            _ => {
                cache.insert(
                    tenant,
                    Held {
                        key: key.clone(),
                        loaded: read_at,
                        signature,
                    },
                );
                Ok(key)
            }
        }
    }

    /// Forgets every tenant's keys not checked against the store for [`KEY_REFRESH`]: a
    /// tenant no one uses does not keep a retired or destroyed version in memory (the
    /// sweeper calls this).
    pub(crate) fn evict_stale(&self) -> Result<usize, VaultError> {
        let mut cache = self.cache.write().map_err(poisoned)?;
        let before = cache.len();
        cache.retain(|_, held| held.loaded.elapsed() < KEY_REFRESH);
        Ok(before - cache.len())
    }

    /// Forgets `tenant`'s data keys: the next use reads the store.
    pub(crate) fn forget(&self, tenant: TenantId) -> Result<(), VaultError> {
        self.cache.write().map_err(poisoned)?.remove(&tenant);
        Ok(())
    }

    /// Unwraps every version `stored` and `versions` hold, and its index keys. A tenant whose
    /// keys were destroyed (being deleted) is not found.
    async fn unwrap_versions(
        &self,
        stored: &StoredTenant,
        versions: &[StoredKeyVersion],
    ) -> Result<DataKey, VaultError> {
        if stored.keys_destroyed() {
            return Err(VaultError::NotFound(Resource::Tenant));
        }
        let tenant = stored.tenant.id;
        let mut plain: Vec<(u32, Zeroizing<Vec<u8>>)> = Vec::with_capacity(versions.len() + 1);
        if stored.holds_first_key() {
            let first = self
                .unwrap_any(WrapPurpose::DataKey(tenant), &stored.wrapped_data_key)
                .await?;
            plain.push((1, first));
        }
        for v in versions {
            let key = self
                .unwrap_any(WrapPurpose::DataKeyVersion(tenant, v.version), &v.wrapped)
                .await?;
            plain.push((v.version, key));
        }
        let index = match (&stored.wrapped_index_keys, plain.first()) {
            (Some(wrapped), _) => {
                self.unwrap_any(WrapPurpose::IndexKeys(tenant), wrapped)
                    .await?
            }
            (None, Some((1, first))) => Zeroizing::new(crypto::derive_index_keys(first)?.to_vec()),
            (None, _) => return Err(CryptoError::Malformed.into()),
        };
        let current = plain
            .iter()
            .map(|(v, _)| *v)
            .max()
            .ok_or(CryptoError::Malformed)?;
        let views: Vec<(u32, &[u8])> = plain.iter().map(|(v, k)| (*v, k.as_slice())).collect();
        Ok(DataKey::from_versions(&views, current, &index)?)
    }

    /// A new version of `tenant`'s data key, wrapped; and, when the tenant has none stored yet,
    /// its index keys (derived from its first key) wrapped, so that the first key can later be
    /// retired without them changing.
    pub(crate) async fn new_version(
        &self,
        stored: &StoredTenant,
        version: u32,
    ) -> Result<(StoredKeyVersion, Option<Vec<u8>>), VaultError> {
        let tenant = stored.tenant.id;
        let index_keys = match &stored.wrapped_index_keys {
            Some(_) => None,
            None => {
                let first = self
                    .unwrap_any(WrapPurpose::DataKey(tenant), &stored.wrapped_data_key)
                    .await?;
                let index = crypto::derive_index_keys(&first)?;
                Some(
                    self.master
                        .wrap(WrapPurpose::IndexKeys(tenant), index.as_ref())
                        .await?,
                )
            }
        };
        let fresh = crypto::random_key();
        let wrapped = self
            .master
            .wrap(WrapPurpose::DataKeyVersion(tenant, version), fresh.as_ref())
            .await?;
        Ok((StoredKeyVersion { version, wrapped }, index_keys))
    }

    /// `stored`'s first key re-wrapped by the current custody, or `None` when it already
    /// wraps it (or was retired or destroyed).
    pub(crate) async fn rewrap(
        &self,
        stored: &StoredTenant,
    ) -> Result<Option<Vec<u8>>, VaultError> {
        if !stored.holds_first_key() {
            return Ok(None);
        }
        let purpose = WrapPurpose::DataKey(stored.tenant.id);
        Ok(self.rewrap_any(purpose, &stored.wrapped_data_key).await?)
    }

    /// `wrapped`, a tenant's later key version or its index keys (`purpose`), re-wrapped by
    /// the current custody, or `None` when it already wraps it.
    pub(crate) async fn rewrap_tenant_key(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<Option<Vec<u8>>, VaultError> {
        Ok(self.rewrap_any(purpose, wrapped).await?)
    }
}

/// How long a process uses a tenant's cached data keys before checking the store for a new,
/// retired or destroyed one: the bound within which every process seals with a new version
/// (docs/operations.md, "Rotating data keys").
pub(crate) const KEY_REFRESH: Duration = Duration::from_secs(5);

/// A tenant's keys held in memory, when they were last checked, and what they were unwrapped
/// from.
struct Held {
    key: Arc<DataKey>,
    loaded: Instant,
    signature: Vec<Vec<u8>>,
}

/// What a tenant's keys were unwrapped from: a change in any means unwrapping again.
fn signature(stored: &StoredTenant, versions: &[StoredKeyVersion]) -> Vec<Vec<u8>> {
    let mut signature = vec![
        stored.wrapped_data_key.clone(),
        stored.wrapped_index_keys.clone().unwrap_or_default(),
    ];
    signature.extend(versions.iter().map(|v| v.wrapped.clone()));
    signature
}

fn poisoned<T>(_: T) -> VaultError {
    VaultError::Store(StoreError::Backend("key cache lock poisoned".into()))
}
