//! The sweep: expired tokens, old `Idempotency-Key`s, CVCs past their retention and audit
//! events past theirs; and fingerprints for tokens written before fingerprints existed.

use time::OffsetDateTime;

use crate::{
    audit::{Actor, AuditAction, AuditEvent},
    error::{StoreError, VaultError},
    ids::{TenantId, TokenId},
    timestamp,
};

use super::{idempotency::IDEMPOTENCY_WINDOW, sealing::decrypt_with, Vault};

/// Rows one sweep round deletes at most (the sweep repeats rounds until none are left).
const SWEEP_BATCH: u32 = 500;

/// What one sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Expired tokens deleted (with their metadata and associations).
    pub expired_tokens: u64,
    /// `Idempotency-Key`s older than the window deleted.
    pub idempotency_keys: u64,
    /// Audit events older than the retention removed.
    pub audit_events: u64,
    /// Cards whose CVC was removed, its retention past.
    pub cvcs_removed: u64,
}

impl Vault {
    /// One round of maintenance: deletes every token expired by now (in batches) and every
    /// `Idempotency-Key` older than [`IDEMPOTENCY_WINDOW`], and removes every card's CVC past
    /// its retention. Safe to run in several processes
    /// over one database at once.
    pub async fn sweep(&self) -> Result<SweepReport, VaultError> {
        self.sweep_at(timestamp::now()).await
    }

    /// [`Vault::sweep`] as of `now`.
    pub async fn sweep_at(&self, now: OffsetDateTime) -> Result<SweepReport, VaultError> {
        let mut report = SweepReport::default();
        loop {
            let deleted = self.store.delete_expired_tokens(now, SWEEP_BATCH).await?;
            let count = deleted.len() as u64;
            report.expired_tokens += count;
            self.record_expiries(deleted).await?;
            if count < u64::from(SWEEP_BATCH) {
                break;
            }
        }
        if report.expired_tokens > 0 {
            // Rows cached by the gateway are checked for expiry on use; dropping them frees
            // the memory sooner.
            self.token_rows.remove_where(|_, row| !row.is_live_at(now));
        }
        report.idempotency_keys = self
            .store
            .delete_idempotency_keys_before(now - IDEMPOTENCY_WINDOW)
            .await?;
        report.cvcs_removed = self.remove_expired_cvcs(now).await?;
        self.keys.evict_stale()?;
        if let Some(retention) = self.audit_retention {
            report.audit_events = self.prune_audit_at(retention, now).await?;
        }
        Ok(report)
    }

    /// Records `token.expired` (actor `system`) for each token the sweep deleted: what
    /// webhooks deliver as Basis Theory's `token.expired` (docs/webhooks.md).
    async fn record_expiries(&self, deleted: Vec<(TenantId, TokenId)>) -> Result<(), VaultError> {
        let events: Vec<AuditEvent> = deleted
            .into_iter()
            .map(|(tenant, id)| {
                AuditEvent::success(
                    tenant,
                    AuditAction::TokenExpired,
                    Actor::System,
                    vec![(&id).into()],
                )
            })
            .collect();
        self.audit.record(events).await.map_err(|e| {
            VaultError::Store(StoreError::Unavailable(format!(
                "recording token expiries in the audit trail: {e}"
            )))
        })
    }

    /// Computes the fingerprint of every token written before fingerprints existed (start-up
    /// runs this; rows not reached yet get theirs computed when read). Returns how many.
    pub async fn backfill_fingerprints(&self) -> Result<u64, VaultError> {
        let mut done = 0u64;
        loop {
            let batch = self.store.unfingerprinted_tokens(SWEEP_BATCH).await?;
            if batch.is_empty() {
                return Ok(done);
            }
            let mut progressed = false;
            for stored in batch {
                let (tenant, id) = (stored.tenant_id, stored.id.clone());
                let key = match self.keys.data_key(self.store.as_ref(), tenant).await {
                    Ok(key) => key,
                    // A tenant being deleted (its keys destroyed): its rows are going.
                    Err(VaultError::NotFound(_)) => continue,
                    Err(e) => return Err(e),
                };
                let token = decrypt_with(&key, self.cvc, stored)?;
                self.store
                    .set_token_fingerprint(tenant, id, &token.fingerprint)
                    .await?;
                done += 1;
                progressed = true;
            }
            if !progressed {
                return Ok(done);
            }
        }
    }
}
