//! The deployment's webhook signing keys (docs/webhooks.md, "Signatures" and "Rotating the
//! signing key"): each private half is a deployment key wrapped by the custody, named
//! `webhook-signing/<version>` among the vault keys (so master-key rotation re-wraps it);
//! each public half is published with the instant from which it signs.
//!
//! The first key is made at first need and signs at once. [`Vault::rotate_webhook_signing_key`]
//! publishes a new one that signs only after an overlap, so receivers can take it first; the
//! previous key stays published, and receivers holding both verify every delivery across the
//! switch.

use std::sync::Arc;

use time::{Duration, OffsetDateTime};

use super::Vault;
use crate::{
    crypto::CryptoError,
    custody::WrapPurpose,
    error::{StoreError, VaultError},
    store::StoredSigningKey,
    timestamp,
    webhook::signing::{self, SigningKey},
};

/// The vault-key name of signing key `version`.
pub(crate) fn key_name(version: u32) -> String {
    format!("webhook-signing/{version}")
}

impl Vault {
    /// The published signing keys, oldest first; the first is made if there is none (by one
    /// caller of this process at a time: concurrent first requests wait for it). Each public
    /// half is the one of the key the custody unwraps, not the stored column alone: a PEM
    /// written into the database without its private half is never served.
    pub async fn webhook_signing_keys(&self) -> Result<Vec<StoredSigningKey>, VaultError> {
        let mut keys = self.store.webhook_signing_keys().await?;
        if keys.is_empty() {
            let _first = self.signing.creating.lock().await;
            keys = self.store.webhook_signing_keys().await?;
            if keys.is_empty() {
                let now = timestamp::now();
                self.add_signing_key(1, now, now).await?;
                keys = self.store.webhook_signing_keys().await?;
            }
        }
        for stored in &mut keys {
            let key = self.signing_key(stored.version).await?;
            stored.public_pem = key.public_pem().to_string();
        }
        Ok(keys)
    }

    /// The key that signs at `now`: the newest one active by then.
    pub async fn webhook_signing_key_at(
        &self,
        now: OffsetDateTime,
    ) -> Result<(StoredSigningKey, Arc<SigningKey>), VaultError> {
        let keys = self.webhook_signing_keys().await?;
        let current = keys
            .iter()
            .rev()
            .find(|k| k.activates_at <= now)
            .or_else(|| keys.first())
            .cloned()
            .ok_or_else(|| StoreError::Backend("no webhook signing key".into()))?;
        let key = self.signing_key(current.version).await?;
        Ok((current, key))
    }

    /// Publishes a new signing key that signs from `overlap` on (`api webhooks
    /// rotate-signing-key`); returns it.
    pub async fn rotate_webhook_signing_key(
        &self,
        overlap: Duration,
    ) -> Result<StoredSigningKey, VaultError> {
        let keys = self.webhook_signing_keys().await?;
        let version = keys.last().map_or(1, |k| k.version + 1);
        let now = timestamp::now();
        self.add_signing_key(version, now, now + overlap).await?;
        self.store
            .webhook_signing_keys()
            .await?
            .into_iter()
            .find(|k| k.version == version)
            .ok_or_else(|| StoreError::Backend("the new signing key was not stored".into()).into())
    }

    /// Signing key `version`, unwrapped (cached for the life of the process).
    async fn signing_key(&self, version: u32) -> Result<Arc<SigningKey>, VaultError> {
        if let Some(key) = self.signing.get(&version) {
            return Ok(key);
        }
        let name = key_name(version);
        let wrapped = self
            .store
            .get_vault_key(&name)
            .await?
            .ok_or(VaultError::Crypto(CryptoError::InvalidKey))?;
        let der = self
            .keys
            .unwrap_vault_key(WrapPurpose::VaultKey(&name), &wrapped)
            .await?;
        let key = Arc::new(SigningKey::from_pkcs8(version, &der)?);
        self.signing.insert(version, key.clone());
        Ok(key)
    }

    /// Makes key `version`, wraps and stores it, then publishes it (another process may have
    /// made the same version first: its key is then the one kept).
    async fn add_signing_key(
        &self,
        version: u32,
        now: OffsetDateTime,
        activates_at: OffsetDateTime,
    ) -> Result<(), VaultError> {
        let (der, public_pem) = tokio::task::spawn_blocking(signing::generate)
            .await
            .map_err(|e| StoreError::Backend(format!("generating a signing key: {e}")))??;
        let name = key_name(version);
        let wrapped = self
            .keys
            .wrap_vault_key(WrapPurpose::VaultKey(&name), &der)
            .await?;
        self.store.insert_vault_key(&name, &wrapped).await?;
        let stored = self
            .store
            .get_vault_key(&name)
            .await?
            .ok_or(VaultError::Crypto(CryptoError::InvalidKey))?;
        let public_pem = if stored == wrapped {
            public_pem
        } else {
            let der = self
                .keys
                .unwrap_vault_key(WrapPurpose::VaultKey(&name), &stored)
                .await?;
            SigningKey::from_pkcs8(version, &der)?
                .public_pem()
                .to_string()
        };
        self.store
            .insert_webhook_signing_key(&StoredSigningKey {
                version,
                public_pem,
                created_at: now,
                activates_at,
            })
            .await?;
        Ok(())
    }

    /// The names of the signing keys among the vault keys (master-key rotation re-wraps them).
    pub(crate) async fn signing_key_names(&self) -> Result<Vec<String>, VaultError> {
        Ok(self
            .store
            .webhook_signing_keys()
            .await?
            .iter()
            .map(|k| key_name(k.version))
            .collect())
    }
}

/// Signing keys unwrapped by this process, by version, and the lock that makes the first one
/// once.
#[derive(Default)]
pub(crate) struct SigningKeys {
    keys: std::sync::RwLock<std::collections::HashMap<u32, Arc<SigningKey>>>,
    creating: tokio::sync::Mutex<()>,
}

impl SigningKeys {
    fn get(&self, version: &u32) -> Option<Arc<SigningKey>> {
        self.keys.read().ok()?.get(version).cloned()
    }

    fn insert(&self, version: u32, key: Arc<SigningKey>) {
        if let Ok(mut keys) = self.keys.write() {
            keys.insert(version, key);
        }
    }
}
