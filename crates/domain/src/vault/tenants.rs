//! Tenant use-cases: creating a tenant with its admin application, and bootstrapping.

use crate::{
    api_key::ApiKey,
    application::{Application, ApplicationType},
    error::VaultError,
    ids::{ApplicationId, TenantId},
    permission::Permission,
    store::{StoredApplication, StoredTenant},
    tenant::{self, Tenant},
    timestamp,
};

use super::Vault;

/// Name of the tenant `bootstrap` creates.
pub(super) const DEFAULT_TENANT_NAME: &str = "default";
/// Name of the management application each new tenant gets.
pub(super) const ADMIN_APPLICATION_NAME: &str = "admin";

/// A new tenant with its admin application and that application's key (shown once).
#[derive(Debug)]
pub struct CreatedTenant {
    /// The tenant.
    pub tenant: Tenant,
    /// Its `management` application holding every permission.
    pub admin: Application,
    /// The admin's API key.
    pub api_key: ApiKey,
}

impl Vault {
    /// Creates a tenant, its data key and an `admin` management application holding every
    /// permission (the one application allowed `token:*` on the management type), all in one
    /// transaction.
    pub async fn create_tenant(&self, name: &str) -> Result<CreatedTenant, VaultError> {
        tenant::validate_name(name)?;
        let now = timestamp::now();
        let tenant = Tenant {
            id: TenantId::new(),
            name: name.to_string(),
            created_at: now,
        };
        let wrapped_data_key = self.keys.new_wrapped_data_key(tenant.id).await?;
        let admin_id = ApplicationId::new();
        let admin = Application {
            permissions: Permission::ALL.to_vec(),
            ..Application::new(
                admin_id,
                tenant.id,
                ADMIN_APPLICATION_NAME,
                ApplicationType::Management,
                (admin_id, now),
            )
        };
        let (api_key, key) = super::application_keys::new_key(&admin, admin_id, now);
        let issued = key.key.clone();
        self.store
            .insert_tenant_with_admin(
                &StoredTenant {
                    tenant: tenant.clone(),
                    wrapped_data_key,
                    wrapped_index_keys: None,
                },
                &StoredApplication {
                    application: admin.clone(),
                    key: Some(key),
                },
            )
            .await?;
        Ok(CreatedTenant {
            tenant,
            admin: Application {
                keys: vec![issued],
                ..admin
            },
            api_key,
        })
    }

    /// Every tenant's id, oldest first, but those being deleted (for operators' commands).
    pub async fn tenant_ids(&self) -> Result<Vec<TenantId>, VaultError> {
        Ok(self
            .store
            .list_tenants()
            .await?
            .into_iter()
            .filter(|t| !t.keys_destroyed())
            .map(|t| t.tenant.id)
            .collect())
    }

    /// On an empty database, creates the `default` tenant and returns it; otherwise `None`.
    pub async fn bootstrap(&self) -> Result<Option<CreatedTenant>, VaultError> {
        if self.store.first_tenant().await?.is_some() {
            return Ok(None);
        }
        self.create_tenant(DEFAULT_TENANT_NAME).await.map(Some)
    }
}
