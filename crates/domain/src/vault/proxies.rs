//! Proxy management use-cases (docs/api.md, "Proxies"): CRUD with validation, the
//! application check, and encryption of the configuration.

use crate::{
    access::{Grants, Principal},
    application::ApplicationType,
    error::{Resource, VaultError},
    ids::ProxyId,
    pagination::{Page, PageRequest},
    permission::Permission,
    proxy::{self, Proxy, ProxyInput, ProxyPatch, ValidProxy},
    secret::Secret,
    store::{ProxyFilter, StoreError, StoredProxy},
    timestamp,
    validation::ValidationErrors,
};

use super::{proxy_secrets::KEY_PURPOSE, Vault};

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
}
