//! Proxy management use-cases (docs/api.md, "Proxies"): CRUD with validation, the
//! application check, and encryption of the configuration.

use std::sync::Arc;

use time::OffsetDateTime;
use zeroize::Zeroizing;

use crate::{
    access::{Grants, Principal},
    application::ApplicationType,
    crypto::DataKey,
    error::{Resource, VaultError},
    ids::{ApplicationId, ProxyId, TenantId},
    pagination::{Page, PageRequest},
    permission::Permission,
    proxy::{self, Configuration, Proxy, ProxyInput, ProxyPatch, ValidProxy},
    secret::Secret,
    store::{ProxyFilter, SealedProxySecrets, StoreError, StoredProxy},
    timestamp,
    validation::ValidationErrors,
};

use super::Vault;

/// Associated-data purpose of an encrypted proxy configuration.
const CONFIGURATION_PURPOSE: &str = "proxy.configuration";
/// Attempts at drawing a key that no other proxy holds (a clash is ~2^-190 likely).
const KEY_ATTEMPTS: usize = 3;

impl Vault {
    /// Creates a proxy with a generated key.
    pub async fn create_proxy(
        &self,
        caller: &Principal,
        input: ProxyInput,
    ) -> Result<Proxy, VaultError> {
        caller.require(Permission::ProxyCreate)?;
        self.check_transforms(&input)?;
        let valid = self.validate_proxy(caller, input).await?;
        let now = timestamp::now();
        let (tenant, id) = (caller.tenant_id(), ProxyId::new());
        let sealer = self.sealer(tenant, id).await?;
        let mut key = Secret::new(proxy::generate_key());
        let stamp = (caller.application_id(), now);
        let mut stored = sealer.record(
            id,
            &valid,
            (
                self.proxy_key_lookup(key.expose()).await?,
                sealer.seal(KEY_PURPOSE, key.expose())?,
            ),
            stamp,
            stamp,
        )?;
        let mut attempt = 1;
        loop {
            match self.store.insert_proxy(&stored).await {
                Ok(()) => break,
                Err(StoreError::Conflict(_)) if attempt < KEY_ATTEMPTS => {
                    attempt += 1;
                    key = Secret::new(proxy::generate_key());
                    stored.key_lookup = self.proxy_key_lookup(key.expose()).await?;
                    stored.key_sealed = sealer.seal(KEY_PURPOSE, key.expose())?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Proxy::assemble(stored, key, valid))
    }

    /// One proxy of the caller's tenant.
    pub async fn get_proxy(&self, caller: &Principal, id: ProxyId) -> Result<Proxy, VaultError> {
        caller.require(Permission::ProxyRead)?;
        let stored = self.stored_proxy(caller, id).await?;
        self.open_proxy(stored).await
    }

    /// A page of the caller's proxies.
    pub async fn list_proxies(
        &self,
        caller: &Principal,
        filter: &ProxyFilter,
        page: PageRequest,
    ) -> Result<Page<Proxy>, VaultError> {
        caller.require(Permission::ProxyRead)?;
        let stored = self
            .store
            .list_proxies(caller.tenant_id(), filter, page)
            .await?;
        let mut items = Vec::with_capacity(stored.items.len());
        for p in stored.items {
            items.push(self.open_proxy(p).await?);
        }
        Ok(Page {
            items,
            total_items: stored.total_items,
            request: stored.request,
        })
    }

    /// Replaces a proxy: the same required fields as create; omitted optional fields return
    /// to their defaults. Keeps id, key and `created_*`.
    pub async fn update_proxy(
        &self,
        caller: &Principal,
        id: ProxyId,
        input: ProxyInput,
    ) -> Result<Proxy, VaultError> {
        caller.require(Permission::ProxyUpdate)?;
        self.check_transforms(&input)?;
        let valid = self.validate_proxy(caller, input).await?;
        let existing = self.stored_proxy(caller, id).await?;
        let sealer = self.sealer(caller.tenant_id(), id).await?;
        let key = Secret::new(sealer.open_string(KEY_PURPOSE, &existing.key_sealed)?);
        let stored = sealer.record(
            id,
            &valid,
            (existing.key_lookup, existing.key_sealed),
            (existing.created_by, existing.created_at),
            (caller.application_id(), timestamp::now()),
        )?;
        if !self.store.update_proxy(&stored).await? {
            return Err(VaultError::NotFound(Resource::Proxy));
        }
        self.forget_proxy(stored.id);
        Ok(Proxy::assemble(stored, key, valid))
    }

    /// Applies a JSON merge patch to a proxy's settings, then replaces it as
    /// [`Vault::update_proxy`] does (the same checks on the result). Keeps id, key and
    /// `created_*`.
    pub async fn patch_proxy(
        &self,
        caller: &Principal,
        id: ProxyId,
        patch: ProxyPatch,
    ) -> Result<Proxy, VaultError> {
        caller.require(Permission::ProxyUpdate)?;
        let current = self
            .open_proxy(self.stored_proxy(caller, id).await?)
            .await?;
        let input = patch.apply_to(&current)?;
        self.update_proxy(caller, id, input).await
    }

    /// Deletes a proxy; its key stops working (at once in this process).
    pub async fn delete_proxy(&self, caller: &Principal, id: ProxyId) -> Result<(), VaultError> {
        caller.require(Permission::ProxyDelete)?;
        let existing = self.stored_proxy(caller, id).await?;
        if !self.store.delete_proxy(caller.tenant_id(), id).await? {
            return Err(VaultError::NotFound(Resource::Proxy));
        }
        self.forget_proxy(existing.id);
        Ok(())
    }

    async fn stored_proxy(
        &self,
        caller: &Principal,
        id: ProxyId,
    ) -> Result<StoredProxy, VaultError> {
        self.store
            .get_proxy(caller.tenant_id(), id)
            .await?
            .ok_or(VaultError::NotFound(Resource::Proxy))
    }

    /// The compile check of `input`'s transforms, when the vault has one; after the permission
    /// and before validation, as the API has always answered.
    fn check_transforms(&self, input: &ProxyInput) -> Result<(), VaultError> {
        match &self.transform_check {
            Some(check) => Ok(crate::transform_check::check_transforms(
                check.as_ref(),
                input,
            )?),
            None => Ok(()),
        }
    }

    /// Field rules, then the application: it must exist in the caller's tenant and be `public`
    /// or `private` (another tenant's application is indistinguishable from a missing one), and
    /// the caller must hold every grant it has (docs/api.md, "No escalation").
    async fn validate_proxy(
        &self,
        caller: &Principal,
        input: ProxyInput,
    ) -> Result<ValidProxy, VaultError> {
        let valid = input.validate(self.destinations)?;
        if let Some(app_id) = valid.application_id {
            match self
                .store
                .get_application(caller.tenant_id(), app_id)
                .await?
            {
                None => {
                    return Err(ValidationErrors::single(
                        "application.id",
                        "no such application in this tenant",
                    )
                    .into());
                }
                Some(app) if app.app_type == ApplicationType::Management => {
                    return Err(ValidationErrors::single(
                        "application.id",
                        "must be a public or private application",
                    )
                    .into());
                }
                // The proxy's transforms act with this application's key, and whoever writes
                // the proxy writes the transforms: binding it is obtaining its key.
                Some(app) => caller.require_covers(Grants::of(&app))?,
            }
        }
        Ok(valid)
    }

    /// Seals and opens one proxy's secrets with its tenant's data key.
    async fn sealer(&self, tenant: TenantId, id: ProxyId) -> Result<Sealer, VaultError> {
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
const KEY_PURPOSE: &str = "proxy.key";
const REQUEST_TRANSFORM_PURPOSE: &str = "proxy.request_transform";
const RESPONSE_TRANSFORM_PURPOSE: &str = "proxy.response_transform";

/// One proxy's tenant data key and the record binding its ciphertexts.
struct Sealer {
    key: Arc<DataKey>,
    tenant: TenantId,
    record: String,
}

/// Who changed a record and when.
type Stamp = (ApplicationId, OffsetDateTime);

impl Sealer {
    /// The record of proxy `id` with `valid`'s settings, its transforms and configuration
    /// sealed to it: what create and update both store. `key` is the key's lookup and sealed
    /// value.
    fn record(
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

    fn seal(&self, purpose: &str, plaintext: &str) -> Result<Vec<u8>, VaultError> {
        Ok(self.key.seal_record(
            self.tenant,
            purpose,
            self.record.as_bytes(),
            plaintext.as_bytes(),
        )?)
    }

    fn seal_optional(
        &self,
        purpose: &str,
        plaintext: Option<&Secret<String>>,
    ) -> Result<Option<Vec<u8>>, VaultError> {
        plaintext
            .map(|p| self.seal(purpose, p.expose()))
            .transpose()
    }

    fn seal_configuration(
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

    fn open(&self, purpose: &str, ciphertext: &[u8]) -> Result<Zeroizing<Vec<u8>>, VaultError> {
        Ok(self
            .key
            .open_record(self.tenant, purpose, self.record.as_bytes(), ciphertext)?)
    }

    fn open_string(&self, purpose: &str, ciphertext: &[u8]) -> Result<String, VaultError> {
        let plaintext = self.open(purpose, ciphertext)?;
        String::from_utf8(plaintext.to_vec()).map_err(|_| {
            StoreError::Corrupt(format!("proxy {} {purpose} is not text", self.record)).into()
        })
    }
}
