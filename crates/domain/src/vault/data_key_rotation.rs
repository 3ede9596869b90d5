//! Rotating a tenant's data key (docs/operations.md, "Rotating data keys"): a new version that
//! seals from then on, in every process within [`KEY_REFRESH`]; a job that re-encrypts every
//! row sealed under an older version, online, resumable, throttled and single per tenant; the
//! versions in use and the rows left on each; and retiring a version no row uses.

use std::{collections::BTreeMap, time::Duration};

use crate::{
    audit::{Actor, AuditAction, AuditEvent},
    crypto,
    error::{Resource, VaultError},
    ids::TenantId,
    store::{DataKeyJob, SealedRow, SealedTable, StoreError, StoredTenant},
    timestamp,
};

use super::{keyring::KEY_REFRESH, reseal::resealed, Vault};

/// Rows read per batch of the job (fewer when the rate is lower).
const BATCH: u32 = 200;
/// Passes over the tables at most: a row written under an older version by a process that had
/// not seen the new one yet is caught by the next pass.
const PASSES: u32 = 4;

/// How the job runs.
#[derive(Debug, Clone)]
pub struct JobSettings {
    /// Who runs it (a process's own id): the lease is held in its name.
    pub owner: String,
    /// Rows re-encrypted per second at most.
    pub rows_per_second: u32,
    /// How long a lease lasts without progress: another process may take over the job after
    /// (a job whose process was killed resumes then).
    pub lease: Duration,
}

/// The versions of a tenant's data key and the rows on each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataKeyStatus {
    /// The tenant.
    pub tenant_id: TenantId,
    /// The version that seals now.
    pub current_version: u32,
    /// Each version held, oldest first, with the rows sealed under it (stored idempotent
    /// answers included).
    pub versions: Vec<(u32, u64)>,
    /// The re-encryption job, if one ever ran.
    pub job: Option<DataKeyJob>,
}

impl Vault {
    /// Gives `tenant`'s data key a new version and starts its re-encryption job; an unfinished
    /// job is returned as it is instead (resume it with [`Vault::run_data_key_job`]).
    pub async fn rotate_data_key(&self, tenant: TenantId) -> Result<DataKeyJob, VaultError> {
        let stored = self.live_tenant(tenant).await?;
        if let Some(job) = self.store.data_key_job(tenant).await? {
            if job.finished_at.is_none() {
                return Ok(job);
            }
        }
        let versions = self.store.data_key_versions(tenant).await?;
        let next = versions.iter().map(|v| v.version).max().unwrap_or(1) + 1;
        let (version, index_keys) = self.keys.new_version(&stored, next).await?;
        let now = timestamp::now();
        let job = DataKeyJob {
            tenant_id: tenant,
            target_version: next,
            stage: Some(SealedTable::Tokens),
            cursor: String::new(),
            rows_done: 0,
            started_at: now,
            updated_at: now,
            finished_at: None,
        };
        if !self
            .store
            .add_data_key_version(&version, &index_keys, &job)
            .await?
        {
            return Err(VaultError::Conflict(
                "another rotation of this tenant's data key started first".into(),
            ));
        }
        self.keys.forget(tenant)?;
        self.record_key_event(tenant, AuditAction::DataKeyRotated)
            .await?;
        Ok(job)
    }

    /// Runs `tenant`'s unfinished job to its end: waits until every process seals with the
    /// new version (twice [`KEY_REFRESH`] after the rotation), then re-encrypts each table's
    /// rows in key order, saving its place after each batch, until no row but stored
    /// idempotent answers is under an older version. Waits up to the lease's length for a lease
    /// another process holds (one that stopped leaves it to run out), then refuses.
    pub async fn run_data_key_job(
        &self,
        tenant: TenantId,
        settings: &JobSettings,
    ) -> Result<DataKeyJob, VaultError> {
        let mut job = self.claim_job(tenant, settings).await?;
        // Until every process seals with the new version; the lease renewed meanwhile.
        let settled = job.started_at + 2 * KEY_REFRESH;
        loop {
            let wait = settled - timestamp::now();
            if !wait.is_positive() {
                break;
            }
            tokio::time::sleep(wait.unsigned_abs().min(settings.lease / 2)).await;
            self.save_job(&job, settings).await?;
        }
        for pass in 0..PASSES {
            while let Some(table) = job.stage {
                self.reencrypt_table(&mut job, table, settings).await?;
                job.stage = next_table(table);
                job.cursor.clear();
                self.save_job(&job, settings).await?;
                self.record_key_event(tenant, AuditAction::DataKeyProgress)
                    .await?;
            }
            let left = self.rows_left(tenant, job.target_version).await?;
            self.save_job(&job, settings).await?;
            if left == 0 {
                break;
            }
            if pass + 1 == PASSES {
                return Err(VaultError::Conflict(format!(
                    "{left} rows were written under an older version while the job ran: run it again"
                )));
            }
            job.stage = Some(SealedTable::Tokens);
        }
        job.finished_at = Some(timestamp::now());
        self.save_job(&job, settings).await?;
        self.record_key_event(tenant, AuditAction::DataKeyReencrypted)
            .await?;
        Ok(job)
    }

    /// The job, claimed for `settings.owner`.
    async fn claim_job(
        &self,
        tenant: TenantId,
        settings: &JobSettings,
    ) -> Result<DataKeyJob, VaultError> {
        let job = self
            .store
            .data_key_job(tenant)
            .await?
            .filter(|job| job.finished_at.is_none())
            .ok_or_else(|| VaultError::Conflict("no unfinished re-encryption job".into()))?;
        // A lease left by a process that stopped (a crash, kill -9) runs out within its
        // length: wait that long before giving up.
        let give_up = std::time::Instant::now() + settings.lease + Duration::from_secs(1);
        loop {
            let now = timestamp::now();
            if self
                .store
                .claim_data_key_job(tenant, &settings.owner, now, now + settings.lease)
                .await?
            {
                return Ok(job);
            }
            if std::time::Instant::now() > give_up {
                return Err(VaultError::Conflict(
                    "another process is running this tenant's re-encryption job".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn save_job(&self, job: &DataKeyJob, settings: &JobSettings) -> Result<(), VaultError> {
        let until = timestamp::now() + settings.lease;
        if self
            .store
            .save_data_key_job(job, &settings.owner, until)
            .await?
        {
            Ok(())
        } else {
            Err(VaultError::Conflict(
                "the job's lease was taken by another process".into(),
            ))
        }
    }

    /// Re-encrypts `table`'s rows after the job's cursor, a batch at a time at the job's rate.
    async fn reencrypt_table(
        &self,
        job: &mut DataKeyJob,
        table: SealedTable,
        settings: &JobSettings,
    ) -> Result<(), VaultError> {
        let tenant = job.tenant_id;
        let rate = settings.rows_per_second.max(1);
        let batch = BATCH.min(rate);
        loop {
            let started = std::time::Instant::now();
            let rows = self
                .store
                .sealed_rows(tenant, table, &job.cursor, batch)
                .await?;
            let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
            if key.current_version() != job.target_version {
                return Err(VaultError::Conflict(
                    "the tenant's data key rotated again: run the newest job".into(),
                ));
            }
            for row in &rows {
                if let Some(values) = resealed(&key, tenant, table, row)? {
                    // Changed since read: the next pass takes it.
                    if self
                        .store
                        .replace_sealed(tenant, table, row, &values)
                        .await?
                    {
                        job.rows_done += 1;
                    }
                }
                job.cursor.clone_from(&row.key);
            }
            job.updated_at = timestamp::now();
            self.save_job(job, settings).await?;
            if rows.len() < batch as usize {
                return Ok(());
            }
            let budget = Duration::from_secs_f64(f64::from(batch) / f64::from(rate));
            if let Some(rest) = budget.checked_sub(started.elapsed()) {
                tokio::time::sleep(rest).await;
            }
        }
    }

    /// Rows of the rewritten tables still under another version than `target`.
    async fn rows_left(&self, tenant: TenantId, target: u32) -> Result<u64, VaultError> {
        let mut left = 0;
        for table in SealedTable::REWRITTEN {
            for (version, rows) in self.count_versions(tenant, table).await? {
                if version != target {
                    left += rows;
                }
            }
        }
        Ok(left)
    }

    /// How many of `tenant`'s rows of `table` each version seals (a scan of the table).
    async fn count_versions(
        &self,
        tenant: TenantId,
        table: SealedTable,
    ) -> Result<BTreeMap<u32, u64>, VaultError> {
        let mut counts = BTreeMap::new();
        let mut cursor = String::new();
        loop {
            let rows = self.store.sealed_rows(tenant, table, &cursor, 1000).await?;
            for row in &rows {
                // A row counts once for each version among its values.
                let versions: std::collections::BTreeSet<u32> = sealed_versions(row).collect();
                for version in versions {
                    *counts.entry(version).or_insert(0) += 1;
                }
            }
            match rows.last() {
                Some(last) if rows.len() == 1000 => cursor.clone_from(&last.key),
                _ => return Ok(counts),
            }
        }
    }

    /// `tenant`'s data-key versions, the rows on each, and its job.
    pub async fn data_key_status(&self, tenant: TenantId) -> Result<DataKeyStatus, VaultError> {
        let stored = self.live_tenant(tenant).await?;
        let held = self.held_versions(&stored).await?;
        let mut versions: BTreeMap<u32, u64> = held.iter().map(|v| (*v, 0)).collect();
        // Rows under a version not held (retired, or a header edited in the database) are
        // shown too: they open under no key.
        for table in SealedTable::ALL {
            for (version, rows) in self.count_versions(tenant, table).await? {
                *versions.entry(version).or_insert(0) += rows;
            }
        }
        Ok(DataKeyStatus {
            tenant_id: tenant,
            current_version: held.last().copied().unwrap_or(1),
            versions: versions.into_iter().collect(),
            job: self.store.data_key_job(tenant).await?,
        })
    }

    /// The versions of `stored`'s data key that are held (not retired), oldest first.
    async fn held_versions(&self, stored: &StoredTenant) -> Result<Vec<u32>, VaultError> {
        let mut held: Vec<u32> = Vec::new();
        if stored.holds_first_key() {
            held.push(1);
        }
        let later = self.store.data_key_versions(stored.tenant.id).await?;
        held.extend(later.iter().map(|v| v.version));
        Ok(held)
    }

    /// Destroys `version` of `tenant`'s data key (by default the oldest held), only when no row
    /// uses it (stored idempotent answers included: they expire within 24 hours) and it is not
    /// the current one. Returns the version retired. A version retired already is purged from
    /// the database's files again (an earlier purge may have been cut short).
    pub async fn retire_data_key(
        &self,
        tenant: TenantId,
        version: Option<u32>,
    ) -> Result<u32, VaultError> {
        let stored = self.live_tenant(tenant).await?;
        let held = self.held_versions(&stored).await?;
        let current = held.last().copied().unwrap_or(1);
        let Some(version) = version.or_else(|| held.first().copied()) else {
            return Err(VaultError::NotFound(Resource::Tenant));
        };
        if version == current {
            return Err(VaultError::Conflict(format!(
                "version {version} is the current one: rotate first"
            )));
        }
        if !held.contains(&version) {
            if version == 0 || version > current {
                return Err(VaultError::Conflict(format!(
                    "version {version} is not held (never made)"
                )));
            }
            // Retired already: purge again (an earlier run's purge may have been cut short).
            self.store.retire_data_key_version(tenant, version).await?;
            return Ok(version);
        }
        let status = self.data_key_status(tenant).await?;
        let rows = status
            .versions
            .iter()
            .find(|(v, _)| *v == version)
            .map_or(0, |(_, rows)| *rows);
        if rows > 0 {
            return Err(VaultError::Conflict(format!(
                "{rows} rows still use version {version}: run the re-encryption job (stored idempotent answers expire within 24 hours)"
            )));
        }
        let retired = self.store.retire_data_key_version(tenant, version).await;
        // Recorded once the key is gone, even if its purge must be run again.
        let still_held = self
            .held_versions(&self.live_tenant(tenant).await?)
            .await?
            .contains(&version);
        if !still_held {
            self.keys.forget(tenant)?;
            self.record_key_event(tenant, AuditAction::DataKeyRetired)
                .await?;
        }
        retired?;
        Ok(version)
    }

    /// `tenant` as stored, unless it is being deleted.
    async fn live_tenant(&self, tenant: TenantId) -> Result<StoredTenant, VaultError> {
        self.store
            .get_tenant(tenant)
            .await?
            .filter(|s| !s.keys_destroyed())
            .ok_or(VaultError::NotFound(Resource::Tenant))
    }

    /// Records `action` by the operator in `tenant`'s chain, committed before it returns.
    async fn record_key_event(
        &self,
        tenant: TenantId,
        action: AuditAction,
    ) -> Result<(), VaultError> {
        let event = AuditEvent::success(tenant, action, Actor::Operator, vec![tenant.into()]);
        self.audit.record(vec![event]).await.map_err(|e| {
            VaultError::Store(StoreError::Unavailable(format!(
                "recording {action} in the audit trail: {e}"
            )))
        })
    }
}

/// The table after `table` in the job's order; `None` after the last.
fn next_table(table: SealedTable) -> Option<SealedTable> {
    let order = SealedTable::REWRITTEN;
    order
        .iter()
        .position(|t| *t == table)
        .and_then(|i| order.get(i + 1))
        .copied()
}

/// The versions of `row`'s sealed values.
fn sealed_versions(row: &SealedRow) -> impl Iterator<Item = u32> + '_ {
    row.values
        .iter()
        .flatten()
        .filter_map(|value| crypto::key_version(value))
}
