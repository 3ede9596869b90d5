//! Application use-cases (docs/api.md, "Applications"): create, read, list, update,
//! regenerate and delete; an application's further keys are in `application_keys.rs`.

use crate::{
    access::{Grants, Principal},
    api_key::ApiKey,
    application::{
        Application, ApplicationInput, ApplicationKey, ApplicationType, ApplicationUpdate,
    },
    error::{Resource, VaultError},
    ids::ApplicationId,
    pagination::{Page, PageRequest},
    permission::Permission,
    store::{ApplicationFilter, StoreError, StoredApplication},
    timestamp,
};

use super::{application_keys::new_key, Vault};

/// An application together with a key just issued for it; the only time the key is visible.
#[derive(Debug)]
pub struct IssuedKey {
    /// The application (its `keys` hold the new key's metadata).
    pub application: Application,
    /// Its new API key.
    pub api_key: ApiKey,
}

/// A created application, with the key issued with it unless it was created without one.
#[derive(Debug)]
pub struct CreatedApplication {
    /// The application (its `keys` hold the new key's metadata, if any).
    pub application: Application,
    /// Its API key; `None` when created with `create_key: false`.
    pub api_key: Option<ApiKey>,
}

impl Vault {
    /// Creates an application in the caller's tenant and issues its key, whatever the input's
    /// `create_key` says ([`Vault::add_application`] honours it).
    pub async fn create_application(
        &self,
        caller: &Principal,
        mut input: ApplicationInput,
    ) -> Result<IssuedKey, VaultError> {
        input.create_key = Some(true);
        let created = self.add_application(caller, input).await?;
        let api_key = created.api_key.ok_or_else(|| {
            StoreError::Backend("the application was created without a key".into())
        })?;
        Ok(IssuedKey {
            application: created.application,
            api_key,
        })
    }

    /// Creates an application in the caller's tenant, with a key unless the input says
    /// `create_key: false`. The caller must hold every grant it gives the application.
    pub async fn add_application(
        &self,
        caller: &Principal,
        input: ApplicationInput,
    ) -> Result<CreatedApplication, VaultError> {
        caller.require(Permission::ApplicationCreate)?;
        let valid = input.validate()?;
        caller.require_covers(Grants {
            permissions: &valid.permissions,
            rules: &valid.rules,
        })?;
        let now = timestamp::now();
        let mut application = Application {
            permissions: valid.permissions,
            rules: valid.rules,
            expires_at: valid.expires_at,
            allowed_origins: valid.allowed_origins.unwrap_or_default(),
            ..Application::new(
                ApplicationId::new(),
                caller.tenant_id(),
                valid.name,
                valid.app_type,
                (caller.application_id(), now),
            )
        };
        let issued = valid
            .create_key
            .then(|| new_key(&application, caller.application_id(), now));
        self.store
            .insert_application(&StoredApplication {
                application: application.clone(),
                key: issued.as_ref().map(|(_, stored)| stored.clone()),
            })
            .await?;
        let api_key = issued.map(|(api_key, stored)| {
            application.keys.push(stored.key);
            api_key
        });
        Ok(CreatedApplication {
            application,
            api_key,
        })
    }

    /// One application of the caller's tenant, with its keys.
    pub async fn get_application(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<Application, VaultError> {
        caller.require(Permission::ApplicationRead)?;
        self.application_with_keys(caller, id).await
    }

    /// The calling application, with its keys: any valid key may read its own application.
    pub async fn calling_application(&self, caller: &Principal) -> Result<Application, VaultError> {
        self.application_with_keys(caller, caller.application_id())
            .await
    }

    /// A page of the caller's tenant's applications, with their keys.
    pub async fn list_applications(
        &self,
        caller: &Principal,
        page: PageRequest,
    ) -> Result<Page<Application>, VaultError> {
        self.find_applications(caller, &ApplicationFilter::default(), page)
            .await
    }

    /// A page of the caller's tenant's applications that `filter` admits, with their keys.
    pub async fn find_applications(
        &self,
        caller: &Principal,
        filter: &ApplicationFilter,
        page: PageRequest,
    ) -> Result<Page<Application>, VaultError> {
        caller.require(Permission::ApplicationRead)?;
        let tenant = caller.tenant_id();
        let mut apps = self.store.list_applications(tenant, filter, page).await?;
        let ids: Vec<ApplicationId> = apps.items.iter().map(|a| a.id).collect();
        if !ids.is_empty() {
            let mut keys: std::collections::BTreeMap<ApplicationId, Vec<ApplicationKey>> =
                std::collections::BTreeMap::new();
            for key in self.store.list_application_keys(tenant, &ids).await? {
                keys.entry(key.application_id).or_default().push(key);
            }
            for app in &mut apps.items {
                app.keys = keys.remove(&app.id).unwrap_or_default();
            }
        }
        Ok(apps)
    }

    /// Replaces an application's name, type, permissions and rules; its keys and expiry are
    /// unchanged. The caller must hold every grant the application has now and every grant it
    /// is given (see [`Vault::managed_application`]). An input without a type keeps the
    /// current one, and is validated once the application is found (with a type, before it is
    /// looked up).
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
        // Left out, the origins stay; a type other than public holds none.
        if let Some(origins) = valid.allowed_origins {
            application.allowed_origins = origins;
        }
        if application.app_type != ApplicationType::Public {
            application.allowed_origins.clear();
        }
        application.modified_by = caller.application_id();
        application.modified_at = timestamp::now();
        if !self.store.update_application(&application).await? {
            return Err(VaultError::NotFound(Resource::Application));
        }
        self.forget_application(id);
        application.keys = self
            .store
            .list_application_keys(caller.tenant_id(), &[id])
            .await?;
        Ok(application)
    }

    /// Revokes every key of the application and issues one; the old ones stop working at
    /// once. The caller must hold every grant of the application: a key is worth what it may
    /// do.
    pub async fn regenerate_application_key(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<IssuedKey, VaultError> {
        caller.require(Permission::ApplicationUpdate)?;
        let application = self.managed_application(caller, id).await?;
        let now = timestamp::now();
        let (api_key, stored) = new_key(&application, caller.application_id(), now);
        if !self
            .store
            .replace_application_keys(&stored, caller.application_id(), now)
            .await?
        {
            return Err(VaultError::NotFound(Resource::Application));
        }
        self.forget_application(id);
        let application = self.application_with_keys(caller, id).await?;
        Ok(IssuedKey {
            application,
            api_key,
        })
    }

    /// Deletes an application; its keys stop working at once. Refused (409) while proxies
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
    /// obtain a key for, or take over or take away, more than it holds itself (docs/api.md, "No
    /// escalation": a key with only `application:update` re-keyed the bootstrap admin).
    pub(super) async fn managed_application(
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

    /// Application `id` of the caller's tenant with its keys (no permission checked here).
    pub(super) async fn application_with_keys(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<Application, VaultError> {
        let tenant = caller.tenant_id();
        let mut application = self
            .store
            .get_application(tenant, id)
            .await?
            .ok_or(VaultError::NotFound(Resource::Application))?;
        application.keys = self.store.list_application_keys(tenant, &[id]).await?;
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
