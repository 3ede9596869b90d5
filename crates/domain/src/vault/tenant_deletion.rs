//! Deleting a tenant (docs/operations.md, "Deleting a tenant"): its data keys are destroyed
//! first (crypto-shredding), so that a copy of the database taken at any point after holds
//! nothing that opens its tokens; then its rows are deleted. Both steps are recorded in the
//! deployment's audit chain. Safe to run again after an interruption: a tenant whose keys are
//! already destroyed goes straight to the second step.

use crate::{
    audit::{Actor, AuditAction, AuditEvent},
    error::{Resource, VaultError},
    ids::TenantId,
};

use super::Vault;

/// What [`Vault::delete_tenant`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantDeletion {
    /// The tenant.
    pub tenant_id: TenantId,
    /// Its keys were destroyed by this run (`false`: an earlier, interrupted run had).
    pub keys_destroyed_now: bool,
}

impl Vault {
    /// Destroys `tenant`'s data keys, then deletes its rows.
    pub async fn delete_tenant(&self, tenant: TenantId) -> Result<TenantDeletion, VaultError> {
        let keys_destroyed_now = self.destroy_tenant_keys(tenant).await?;
        self.delete_tenant_rows(tenant).await?;
        Ok(TenantDeletion {
            tenant_id: tenant,
            keys_destroyed_now,
        })
    }

    /// The first step: destroys `tenant`'s data keys, forgets the copy this process holds, and
    /// records `tenant.keys_destroyed`. `false` when an earlier run had destroyed them.
    pub async fn destroy_tenant_keys(&self, tenant: TenantId) -> Result<bool, VaultError> {
        let stored = self
            .store
            .get_tenant(tenant)
            .await?
            .ok_or(VaultError::NotFound(Resource::Tenant))?;
        let already = stored.wrapped_data_key.is_empty();
        // Again after an interrupted run: what the first run destroyed is purged once more.
        if !self.store.destroy_tenant_keys(tenant).await? {
            return Err(VaultError::NotFound(Resource::Tenant));
        }
        // After the store: a read meanwhile would have cached it again.
        self.keys.forget(tenant)?;
        if !already {
            self.record_deployment_event(AuditAction::TenantKeysDestroyed, tenant)
                .await;
        }
        Ok(!already)
    }

    /// The second step: deletes `tenant`'s rows (its keys must be destroyed first) and records
    /// `tenant.deleted`.
    pub async fn delete_tenant_rows(&self, tenant: TenantId) -> Result<(), VaultError> {
        let stored = self
            .store
            .get_tenant(tenant)
            .await?
            .ok_or(VaultError::NotFound(Resource::Tenant))?;
        if !stored.wrapped_data_key.is_empty() {
            return Err(VaultError::Conflict(
                "the tenant's keys are not destroyed yet: destroy them first".into(),
            ));
        }
        if !self.store.delete_tenant(tenant).await? {
            return Err(VaultError::NotFound(Resource::Tenant));
        }
        self.record_deployment_event(AuditAction::TenantDeleted, tenant)
            .await;
        Ok(())
    }

    async fn record_deployment_event(&self, action: AuditAction, tenant: TenantId) {
        let event = AuditEvent::deployment(action, Actor::Operator, vec![tenant.into()]);
        if let Err(e) = self.audit.record(vec![event]).await {
            tracing::error!(tenant = %tenant, error = %e, action = %action, "cannot record a tenant deletion in the audit trail");
        }
    }
}
