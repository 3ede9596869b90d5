//! Proxy management use-cases (source §4.5–4.6, SUPPLEMENT §5): CRUD with validation, the
//! application check, and encryption of the configuration.

use crate::{
    access::Principal,
    application::ApplicationType,
    error::{Resource, VaultError},
    ids::{ProxyId, TenantId},
    pagination::{Page, PageRequest},
    permission::Permission,
    proxy::{self, Configuration, Proxy, ProxyInput, ValidProxy},
    secret::Secret,
    store::{ProxyFilter, StoreError, StoredProxy},
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
        let valid = self.validate_proxy(caller, input).await?;
        let now = timestamp::now();
        let id = ProxyId::new();
        let mut stored = StoredProxy {
            id,
            tenant_id: caller.tenant_id(),
            name: valid.name,
            key: proxy::generate_key(),
            destination_url: valid.destination_url,
            request_transform: valid.request_transform,
            response_transform: valid.response_transform,
            application_id: valid.application_id,
            configuration_ciphertext: self
                .seal_configuration(caller.tenant_id(), id, valid.configuration.as_ref())
                .await?,
            require_auth: valid.require_auth,
            created_by: caller.application_id(),
            created_at: now,
            modified_by: caller.application_id(),
            modified_at: now,
        };
        let mut attempt = 1;
        loop {
            match self.store.insert_proxy(&stored).await {
                Ok(()) => break,
                Err(StoreError::Conflict(_)) if attempt < KEY_ATTEMPTS => {
                    attempt += 1;
                    stored.key = proxy::generate_key();
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Proxy {
            configuration: valid.configuration,
            ..self.open_proxy(stored.clone(), None).await?
        })
    }

    /// One proxy of the caller's tenant.
    pub async fn get_proxy(&self, caller: &Principal, id: ProxyId) -> Result<Proxy, VaultError> {
        caller.require(Permission::ProxyRead)?;
        let stored = self.stored_proxy(caller, id).await?;
        self.open_proxy(stored, None).await
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
            items.push(self.open_proxy(p, None).await?);
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
        let valid = self.validate_proxy(caller, input).await?;
        let existing = self.stored_proxy(caller, id).await?;
        let stored = StoredProxy {
            name: valid.name,
            destination_url: valid.destination_url,
            request_transform: valid.request_transform,
            response_transform: valid.response_transform,
            application_id: valid.application_id,
            configuration_ciphertext: self
                .seal_configuration(caller.tenant_id(), id, valid.configuration.as_ref())
                .await?,
            require_auth: valid.require_auth,
            modified_by: caller.application_id(),
            modified_at: timestamp::now(),
            ..existing
        };
        if !self.store.update_proxy(&stored).await? {
            return Err(VaultError::NotFound(Resource::Proxy));
        }
        self.forget_proxy_key(&stored.key);
        self.open_proxy(stored, valid.configuration).await
    }

    /// Deletes a proxy; its key stops working (at once in this process).
    pub async fn delete_proxy(&self, caller: &Principal, id: ProxyId) -> Result<(), VaultError> {
        caller.require(Permission::ProxyDelete)?;
        let existing = self.stored_proxy(caller, id).await?;
        if !self.store.delete_proxy(caller.tenant_id(), id).await? {
            return Err(VaultError::NotFound(Resource::Proxy));
        }
        self.forget_proxy_key(&existing.key);
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

    /// Field rules, then the application: it must exist in the caller's tenant and be `public`
    /// or `private` (another tenant's application is indistinguishable from a missing one).
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
                Some(_) => {}
            }
        }
        Ok(valid)
    }

    async fn seal_configuration(
        &self,
        tenant: TenantId,
        id: ProxyId,
        configuration: Option<&Secret<Configuration>>,
    ) -> Result<Option<Vec<u8>>, VaultError> {
        let Some(configuration) = configuration else {
            return Ok(None);
        };
        let plaintext = Secret::new(
            serde_json::to_vec(configuration.expose())
                .map_err(|e| StoreError::Backend(format!("serialising configuration: {e}")))?,
        );
        let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
        Ok(Some(key.seal_record(
            tenant,
            CONFIGURATION_PURPOSE,
            id.to_string().as_bytes(),
            plaintext.expose(),
        )?))
    }

    /// Decrypts a stored proxy (or uses `known`, the configuration just written).
    pub(super) async fn open_proxy(
        &self,
        stored: StoredProxy,
        known: Option<Secret<Configuration>>,
    ) -> Result<Proxy, VaultError> {
        let configuration = match (known, &stored.configuration_ciphertext) {
            (Some(c), _) => Some(c),
            (None, None) => None,
            (None, Some(ciphertext)) => {
                let key = self
                    .keys
                    .data_key(self.store.as_ref(), stored.tenant_id)
                    .await?;
                let plaintext = key.open_record(
                    stored.tenant_id,
                    CONFIGURATION_PURPOSE,
                    stored.id.to_string().as_bytes(),
                    ciphertext,
                )?;
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
            id: stored.id,
            tenant_id: stored.tenant_id,
            name: stored.name,
            key: stored.key,
            parsed_destination: url::Url::parse(&stored.destination_url).ok(),
            destination_url: stored.destination_url,
            request_transform: stored.request_transform,
            response_transform: stored.response_transform,
            application_id: stored.application_id,
            configuration,
            require_auth: stored.require_auth,
            created_by: stored.created_by,
            created_at: stored.created_at,
            modified_by: stored.modified_by,
            modified_at: stored.modified_at,
        })
    }
}
