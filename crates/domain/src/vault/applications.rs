//! Application use-cases: CRUD and key regeneration.

use crate::{
    access::{Grants, Principal},
    api_key::ApiKey,
    application::{Application, ApplicationInput, ApplicationType, ApplicationUpdate},
    error::{Resource, VaultError},
    ids::ApplicationId,
    pagination::{Page, PageRequest},
    permission::Permission,
    store::{StoreError, StoredApplication},
    timestamp,
};

use super::Vault;

/// An application together with a key just issued for it; the only time the key is visible.
#[derive(Debug)]
pub struct IssuedKey {
    /// The application.
    pub application: Application,
    /// Its new API key.
    pub api_key: ApiKey,
}

impl Vault {
    /// Creates an application in the caller's tenant and issues its key.
    pub async fn create_application(
        &self,
        caller: &Principal,
        input: ApplicationInput,
    ) -> Result<IssuedKey, VaultError> {
        caller.require(Permission::ApplicationCreate)?;
        let valid = input.validate()?;
        caller.require_covers(Grants {
            permissions: &valid.permissions,
            rules: &valid.rules,
        })?;
        let now = timestamp::now();
        let application = Application {
            id: ApplicationId::new(),
            tenant_id: caller.tenant_id(),
            name: valid.name,
            app_type: valid.app_type,
            permissions: valid.permissions,
            rules: valid.rules,
            created_by: caller.application_id(),
            created_at: now,
            modified_by: caller.application_id(),
            modified_at: now,
        };
        let api_key = ApiKey::generate();
        self.store
            .insert_application(&StoredApplication {
                application: application.clone(),
                key_hash: api_key.hash(),
            })
            .await?;
        Ok(IssuedKey {
            application,
            api_key,
        })
    }

    /// One application of the caller's tenant.
    pub async fn get_application(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<Application, VaultError> {
        caller.require(Permission::ApplicationRead)?;
        self.store
            .get_application(caller.tenant_id(), id)
            .await?
            .ok_or(VaultError::NotFound(Resource::Application))
    }

    /// A page of the caller's tenant's applications.
    pub async fn list_applications(
        &self,
        caller: &Principal,
        page: PageRequest,
    ) -> Result<Page<Application>, VaultError> {
        caller.require(Permission::ApplicationRead)?;
        Ok(self
            .store
            .list_applications(caller.tenant_id(), page)
            .await?)
    }

    /// Replaces an application's name, type, permissions and rules; its key is unchanged. The
    /// caller must hold every grant the application has now and every grant it is given
    /// (see [`Vault::managed_application`]). An input without a type keeps the current one, and
    /// is validated once the application is found (with a type, before it is looked up).
    pub async fn update_application(
        &self,
        caller: &Principal,
        id: ApplicationId,
        input: impl Into<ApplicationUpdate>,
    ) -> Result<Application, VaultError> {
        caller.require(Permission::ApplicationUpdate)?;
        let input = input.into();
        let typed = match input.app_type {
            Some(app_type) => Ok(input.with_type_or(app_type).validate()?),
            None => Err(input),
        };
        let mut application = self.managed_application(caller, id).await?;
        let valid = match typed {
            Ok(valid) => valid,
            Err(untyped) => untyped.with_type_or(application.app_type).validate()?,
        };
        caller.require_covers(Grants {
            permissions: &valid.permissions,
            rules: &valid.rules,
        })?;
        if valid.app_type == ApplicationType::Management {
            // Proxies may only use public or private applications for `req.svc`.
            let users = self
                .store
                .proxies_using_application(caller.tenant_id(), id, 11)
                .await?;
            if !users.is_empty() {
                return Err(in_use(&users));
            }
        }
        application.name = valid.name;
        application.app_type = valid.app_type;
        application.permissions = valid.permissions;
        application.rules = valid.rules;
        application.modified_by = caller.application_id();
        application.modified_at = timestamp::now();
        if !self.store.update_application(&application).await? {
            return Err(VaultError::NotFound(Resource::Application));
        }
        self.forget_application(id);
        Ok(application)
    }

    /// Issues a new key; the old one stops working at once. The caller must hold every grant
    /// of the application: a key is worth what it may do.
    pub async fn regenerate_application_key(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<IssuedKey, VaultError> {
        caller.require(Permission::ApplicationUpdate)?;
        self.managed_application(caller, id).await?;
        let api_key = ApiKey::generate();
        let now = timestamp::now();
        let tenant = caller.tenant_id();
        if !self
            .store
            .replace_application_key(tenant, id, &api_key.hash(), caller.application_id(), now)
            .await?
        {
            return Err(VaultError::NotFound(Resource::Application));
        }
        self.forget_application(id);
        let application = self
            .store
            .get_application(tenant, id)
            .await?
            .ok_or(VaultError::NotFound(Resource::Application))?;
        Ok(IssuedKey {
            application,
            api_key,
        })
    }

    /// Deletes an application; its key stops working at once. Refused (409) while proxies
    /// name it as their `req.svc` application.
    pub async fn delete_application(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<(), VaultError> {
        caller.require(Permission::ApplicationDelete)?;
        self.managed_application(caller, id).await?;
        let tenant = caller.tenant_id();
        let users = self.store.proxies_using_application(tenant, id, 11).await?;
        if !users.is_empty() {
            return Err(in_use(&users));
        }
        match self.store.delete_application(tenant, id).await {
            Ok(true) => {
                self.forget_application(id);
                Ok(())
            }
            Ok(false) => Err(VaultError::NotFound(Resource::Application)),
            // A proxy created since the check: the foreign key refused the delete.
            Err(StoreError::Conflict(_)) => Err(in_use(
                &self.store.proxies_using_application(tenant, id, 10).await?,
            )),
            Err(e) => Err(e.into()),
        }
    }
}

impl Vault {
    /// The application `id` of the caller's tenant, if the caller may manage it: change it,
    /// re-key it or delete it. That takes holding every grant it has, so that no caller can
    /// obtain a key for, or take over or take away, more than it holds itself (attack finding
    /// 5: a key with only `application:update` re-keyed the bootstrap admin).
    async fn managed_application(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<Application, VaultError> {
        let application = self
            .store
            .get_application(caller.tenant_id(), id)
            .await?
            .ok_or(VaultError::NotFound(Resource::Application))?;
        caller.require_covers(Grants::of(&application))?;
        Ok(application)
    }
}

fn in_use(proxies: &[(crate::ids::ProxyId, String)]) -> VaultError {
    let mut names: Vec<String> = proxies
        .iter()
        .take(10)
        .map(|(id, name)| format!("{name} ({id})"))
        .collect();
    if proxies.len() > 10 {
        names.push("and more".to_string());
    }
    VaultError::Conflict(format!(
        "the application is used by proxies: {}; change or delete them first",
        names.join(", ")
    ))
}
