//! The audit trail's use-cases: recording (through the vault's [`AuditLog`]), reading one's
//! own tenant's events, verifying the chains and applying retention (the trail itself is the
//! `tessera-audit` crate).

use time::{Duration, OffsetDateTime};

use super::Vault;
use crate::{
    access::Principal,
    audit::{AuditFilter, AuditLog, ChainedEvent, VerifyReport},
    error::VaultError,
    ids::TenantId,
    pagination::{Page, PageRequest},
    permission::Permission,
};

impl Vault {
    /// Records audit events with `log` (default: [`AuditLog::off`]).
    pub fn with_audit(mut self, log: AuditLog) -> Self {
        self.audit = log;
        self
    }

    /// Keeps audit events for `retention`: [`Vault::sweep`] removes older ones.
    pub fn with_audit_retention(mut self, retention: Duration) -> Self {
        self.audit_retention = Some(retention);
        self
    }

    /// The recorder the edges (management API, gateway) hand their events to.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// A page of the caller's tenant's events, newest first. Needs `audit:read`.
    pub async fn list_audit_events(
        &self,
        caller: &Principal,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<ChainedEvent>, VaultError> {
        caller.require(Permission::AuditRead)?;
        Ok(self.audit.list(caller.tenant_id(), filter, page).await?)
    }

    /// Re-walks the caller's own tenant's chain (see [`AuditLog::verify`]): what the console's
    /// Verify button shows. Needs `audit:read`; other tenants' chains are never walked.
    pub async fn verify_own_audit(&self, caller: &Principal) -> Result<VerifyReport, VaultError> {
        caller.require(Permission::AuditRead)?;
        self.verify_audit(Some(caller.tenant_id())).await
    }

    /// Re-walks every chain, or `tenant`'s (see [`AuditLog::verify`]).
    pub async fn verify_audit(&self, tenant: Option<TenantId>) -> Result<VerifyReport, VaultError> {
        Ok(self.audit.verify(tenant).await?)
    }

    /// Removes events older than `retention` (from `now`); returns how many.
    pub async fn prune_audit_at(
        &self,
        retention: Duration,
        now: OffsetDateTime,
    ) -> Result<u64, VaultError> {
        Ok(self.audit.prune(now - retention).await?)
    }
}
