//! A proxy's secrets at rest (docs/architecture.md, "Encryption at rest"): its key, its
//! transforms and its configuration, each sealed with the tenant's data key and bound to the
//! proxy's record and purpose; opening them, and sealing the secrets of proxies written before
//! they were sealed.

use std::sync::Arc;

use time::OffsetDateTime;
use zeroize::Zeroizing;

use crate::{
    crypto::DataKey,
    error::VaultError,
    ids::{ApplicationId, ProxyId, TenantId},
    proxy::{Configuration, Proxy, ValidProxy},
    secret::Secret,
    store::{SealedProxySecrets, StoreError, StoredProxy},
};

use super::Vault;

/// Associated-data purpose of an encrypted proxy configuration.
const CONFIGURATION_PURPOSE: &str = "proxy.configuration";

impl Vault {
    /// Seals and opens one proxy's secrets with its tenant's data key.
    pub(super) async fn sealer(&self, tenant: TenantId, id: ProxyId) -> Result<Sealer, VaultError> {
        Ok(Sealer {
            key: self.keys.data_key(self.store.as_ref(), tenant).await?,
            tenant,
            record: id.to_string(),
        })
    }

    /// The lookup hash under which a proxy key is stored and found.
    pub(super) async fn proxy_key_lookup(&self, key: &str) -> Result<[u8; 32], VaultError> {
        Ok(self.keys.lookup_key(self.store.as_ref()).await?.digest(key))
    }

    /// Decrypts a stored proxy: key, transforms and configuration.
    pub(super) async fn open_proxy(&self, stored: StoredProxy) -> Result<Proxy, VaultError> {
        let sealer = self.sealer(stored.tenant_id, stored.id).await?;
        let open = |purpose, sealed: &Option<Vec<u8>>| {
            sealed
                .as_ref()
                .map(|s| sealer.open_string(purpose, s).map(Secret::new))
                .transpose()
        };
        let configuration = match &stored.configuration_ciphertext {
            None => None,
            Some(ciphertext) => {
                let plaintext = sealer.open(CONFIGURATION_PURPOSE, ciphertext)?;
                Some(Secret::new(serde_json::from_slice(&plaintext).map_err(
                    |_| {
                        StoreError::Corrupt(format!(
                            "proxy {} configuration is not a string map",
                            stored.id
                        ))
                    },
                )?))
            }
        };
        Ok(Proxy {
            key: Secret::new(sealer.open_string(KEY_PURPOSE, &stored.key_sealed)?),
            request_transform: open(REQUEST_TRANSFORM_PURPOSE, &stored.request_transform_sealed)?,
            response_transform: open(
                RESPONSE_TRANSFORM_PURPOSE,
                &stored.response_transform_sealed,
            )?,
            id: stored.id,
            tenant_id: stored.tenant_id,
            name: stored.name,
            parsed_destination: url::Url::parse(&stored.destination_url).ok(),
            destination_url: stored.destination_url,
            application_id: stored.application_id,
            configuration,
            require_auth: stored.require_auth,
            created_by: stored.created_by,
            created_at: stored.created_at,
            modified_by: stored.modified_by,
            modified_at: stored.modified_at,
        })
    }

    /// Seals the secrets of proxies written before they were sealed (their keys and transform
    /// code were stored in clear), a batch at a time, and clears the clear columns. Safe with
    /// several processes starting at once: a row already sealed by another is skipped. Returns
    /// how many this call sealed.
    pub async fn seal_legacy_proxies(&self) -> Result<usize, VaultError> {
        let mut sealed = 0;
        loop {
            let batch = self.store.unsealed_proxies(100).await?;
            if batch.is_empty() {
                if sealed > 0 {
                    self.store.purge_unsealed().await?;
                }
                return Ok(sealed);
            }
            for legacy in batch {
                let sealer = self.sealer(legacy.tenant_id, legacy.id).await?;
                let secrets = SealedProxySecrets {
                    key_lookup: self.proxy_key_lookup(legacy.key.expose()).await?,
                    key_sealed: sealer.seal(KEY_PURPOSE, legacy.key.expose())?,
                    request_transform_sealed: sealer.seal_optional(
                        REQUEST_TRANSFORM_PURPOSE,
                        legacy.request_transform.as_ref(),
                    )?,
                    response_transform_sealed: sealer.seal_optional(
                        RESPONSE_TRANSFORM_PURPOSE,
                        legacy.response_transform.as_ref(),
                    )?,
                };
                if self
                    .store
                    .seal_proxy(legacy.tenant_id, legacy.id, &secrets)
                    .await?
                {
                    sealed += 1;
                }
            }
        }
    }
}

/// Associated-data purposes of a proxy's sealed secrets (with the tenant and proxy id).
pub(super) const KEY_PURPOSE: &str = "proxy.key";
/// The purposes of a proxy's sealed columns in the order the store's sealed rows give them
/// (configuration, key, request transform, response transform).
pub(super) const SEALED_COLUMN_PURPOSES: [&str; 4] = [
    CONFIGURATION_PURPOSE,
    KEY_PURPOSE,
    REQUEST_TRANSFORM_PURPOSE,
    RESPONSE_TRANSFORM_PURPOSE,
];
const REQUEST_TRANSFORM_PURPOSE: &str = "proxy.request_transform";
const RESPONSE_TRANSFORM_PURPOSE: &str = "proxy.response_transform";

/// One proxy's tenant data key and the record binding its ciphertexts.
pub(super) struct Sealer {
    key: Arc<DataKey>,
    tenant: TenantId,
    record: String,
}

/// Who changed a record and when.
pub(super) type Stamp = (ApplicationId, OffsetDateTime);

impl Sealer {
    /// The record of proxy `id` with `valid`'s settings, its transforms and configuration
    /// sealed to it: what create and update both store. `key` is the key's lookup and sealed
    /// value.
    pub(super) fn record(
        &self,
        id: ProxyId,
        valid: &ValidProxy,
        (key_lookup, key_sealed): ([u8; 32], Vec<u8>),
        (created_by, created_at): Stamp,
        (modified_by, modified_at): Stamp,
    ) -> Result<StoredProxy, VaultError> {
        Ok(StoredProxy {
            id,
            tenant_id: self.tenant,
            name: valid.name.clone(),
            key_lookup,
            key_sealed,
            destination_url: valid.destination_url.clone(),
            request_transform_sealed: self
                .seal_optional(REQUEST_TRANSFORM_PURPOSE, valid.request_transform.as_ref())?,
            response_transform_sealed: self.seal_optional(
                RESPONSE_TRANSFORM_PURPOSE,
                valid.response_transform.as_ref(),
            )?,
            application_id: valid.application_id,
            configuration_ciphertext: self.seal_configuration(valid.configuration.as_ref())?,
            require_auth: valid.require_auth,
            created_by,
            created_at,
            modified_by,
            modified_at,
        })
    }

    pub(super) fn seal(&self, purpose: &str, plaintext: &str) -> Result<Vec<u8>, VaultError> {
        Ok(self.key.seal_record(
            self.tenant,
            purpose,
            self.record.as_bytes(),
            plaintext.as_bytes(),
        )?)
    }

    pub(super) fn seal_optional(
        &self,
        purpose: &str,
        plaintext: Option<&Secret<String>>,
    ) -> Result<Option<Vec<u8>>, VaultError> {
        plaintext
            .map(|p| self.seal(purpose, p.expose()))
            .transpose()
    }

    pub(super) fn seal_configuration(
        &self,
        configuration: Option<&Secret<Configuration>>,
    ) -> Result<Option<Vec<u8>>, VaultError> {
        let Some(configuration) = configuration else {
            return Ok(None);
        };
        let plaintext = Secret::new(
            serde_json::to_string(configuration.expose())
                .map_err(|e| StoreError::Backend(format!("serialising configuration: {e}")))?,
        );
        self.seal(CONFIGURATION_PURPOSE, plaintext.expose())
            .map(Some)
    }

    pub(super) fn open(
        &self,
        purpose: &str,
        ciphertext: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, VaultError> {
        Ok(self
            .key
            .open_record(self.tenant, purpose, self.record.as_bytes(), ciphertext)?)
    }

    pub(super) fn open_string(
        &self,
        purpose: &str,
        ciphertext: &[u8],
    ) -> Result<String, VaultError> {
        let plaintext = self.open(purpose, ciphertext)?;
        String::from_utf8(plaintext.to_vec()).map_err(|_| {
            StoreError::Corrupt(format!("proxy {} {purpose} is not text", self.record)).into()
        })
    }
}
