//! The use-cases: everything a caller can do, with permission checks, validation and
//! encryption applied. HTTP handlers and embedding programs both go through [`Vault`].

mod applications;
mod associations;
mod keyring;
mod proxies;
mod tenants;
mod tokens;

use std::sync::Arc;

pub use applications::IssuedKey;
pub use tenants::CreatedTenant;

use crate::{
    access::Principal, api_key::ApiKey, crypto::MasterKey, error::VaultError,
    proxy::DestinationPolicy, store::Store,
};
use keyring::Keyring;

/// The vault: use-cases over a [`Store`], holding the master key.
///
/// Cheap to clone (everything inside is shared), so one instance serves every request.
#[derive(Clone)]
pub struct Vault {
    store: Arc<dyn Store>,
    keys: Arc<Keyring>,
    destinations: DestinationPolicy,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").finish_non_exhaustive()
    }
}

impl Vault {
    /// A vault over `store`, encrypting with data keys wrapped by `master_key`.
    pub fn new(store: Arc<dyn Store>, master_key: MasterKey) -> Self {
        Self {
            keys: Arc::new(Keyring::new(master_key)),
            store,
            destinations: DestinationPolicy::default(),
        }
    }

    /// Sets which proxy destinations are accepted (default: public `https` only).
    pub fn with_destination_policy(mut self, policy: DestinationPolicy) -> Self {
        self.destinations = policy;
        self
    }

    /// The underlying store, for health checks.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Turns a presented `SVC-API-KEY` value into a [`Principal`].
    ///
    /// Looks the key up by its hash on every call (no cache), so a regenerated key or a deleted
    /// application stops working at once.
    pub async fn authenticate(&self, presented: Option<&str>) -> Result<Principal, VaultError> {
        let presented = presented.ok_or(VaultError::Unauthenticated(
            "the SVC-API-KEY header is required",
        ))?;
        let key = ApiKey::parse(presented)
            .ok_or(VaultError::Unauthenticated("the API key is malformed"))?;
        let hash = key.hash();
        match self.store.find_application_by_key_hash(&hash).await? {
            Some(stored) if stored.key_hash.verify(&hash) => {
                Ok(Principal::new(&stored.application))
            }
            _ => Err(VaultError::Unauthenticated(
                "the API key is unknown or has been revoked",
            )),
        }
    }

    /// Checks that the configured master key opens existing data (by unwrapping the oldest
    /// tenant's data key), so a wrong key stops start-up instead of failing every request.
    pub async fn verify_master_key(&self) -> Result<(), VaultError> {
        if let Some(tenant) = self.store.first_tenant().await? {
            self.keys.unwrap_uncached(&tenant)?;
        }
        Ok(())
    }
}
