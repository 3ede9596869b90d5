//! The CVC sweep (docs/operations.md, "CVC retention"): a card's data is sealed again without
//! its CVC once the retention, counted from the token's creation, has passed. Reads no longer
//! see the CVC from that moment whether or not the sweep has run ([`super::tokens`]); the sweep
//! is what removes it from the database.

use time::OffsetDateTime;

use crate::{
    audit::{Actor, AuditAction, AuditEvent},
    crypto::DataKey,
    error::VaultError,
    secret::Secret,
    store::{StoreError, StoredToken, TokenUpdate},
    token::{remove_cvc, Indexing},
    validation::ValidationErrors,
};

use super::{
    sealing::{open_data, seal_data},
    Vault,
};

/// Rows read per round of the sweep.
const CVC_BATCH: u32 = 200;

/// What the sweep did with one row.
enum Swept {
    /// Its CVC was removed.
    Removed,
    /// It held none: only its mark was cleared.
    Unmarked,
    /// It changed since it was read: left for the next round.
    Changed,
}

impl Vault {
    /// Seals again, without its CVC, the data of every card created at or before
    /// `now - retention` whose row may hold one, recording each removal as
    /// `token.cvc_removed`; returns how many were removed. Idempotent, and safe in several
    /// processes at once: a row is written only if unchanged since it was read (a row changed
    /// meanwhile keeps its mark for the next sweep), and `modified_at` is left as it was.
    pub(super) async fn remove_expired_cvcs(&self, now: OffsetDateTime) -> Result<u64, VaultError> {
        let cutoff = self.cvc.cutoff(now);
        let mut removed = 0u64;
        loop {
            let batch = self.store.tokens_holding_cvc(cutoff, CVC_BATCH).await?;
            let full = batch.len() == CVC_BATCH as usize;
            let mut events = Vec::new();
            let mut progressed = false;
            for stored in batch {
                let (tenant, id) = (stored.tenant_id, stored.id.clone());
                match self.sweep_one(stored, now).await? {
                    Swept::Removed => {
                        removed += 1;
                        progressed = true;
                        events.push(AuditEvent::success(
                            tenant,
                            AuditAction::TokenCvcRemoved,
                            Actor::System,
                            vec![(&id).into()],
                        ));
                        self.token_rows
                            .remove_where(|k, _| k.0 == tenant && k.1 == id);
                    }
                    Swept::Unmarked => progressed = true,
                    Swept::Changed => {}
                }
            }
            if !events.is_empty() {
                self.audit.record(events).await.map_err(|e| {
                    VaultError::Store(StoreError::Unavailable(format!(
                        "recording CVC removals in the audit trail: {e}"
                    )))
                })?;
            }
            if !full || !progressed {
                return Ok(removed);
            }
        }
    }

    /// One marked row: its data sealed again without the CVC (search indexes and fingerprint
    /// rendered again over it), or only its mark cleared when it holds none.
    async fn sweep_one(
        &self,
        stored: StoredToken,
        now: OffsetDateTime,
    ) -> Result<Swept, VaultError> {
        let key = match self
            .keys
            .data_key(self.store.as_ref(), stored.tenant_id)
            .await
        {
            Ok(key) => key,
            // A tenant being deleted (its keys destroyed): its rows are going.
            Err(VaultError::NotFound(_)) => return Ok(Swept::Changed),
            Err(e) => return Err(e),
        };
        let mut data = Secret::new(open_data(&key, &stored)?);
        let had = remove_cvc(stored.token_type, data.expose_mut());
        let mut update = TokenUpdate {
            tenant_id: stored.tenant_id,
            id: stored.id.clone(),
            created_at: stored.created_at,
            container: stored.container.clone(),
            expected_modified_at: stored.modified_at,
            live_at: now,
            metadata: stored.metadata.clone(),
            ciphertext: None,
            fingerprint: None,
            expires_at: stored.expires_at,
            destinations: None,
            search: None,
            fingerprint_expression: None,
            holds_cvc: Some(false),
            only_if_holding_cvc: true,
            mask: None,
            modified_by: stored.modified_by,
            modified_at: stored.modified_at,
        };
        if had {
            resealed(&key, &stored, &data, &mut update)?;
        }
        Ok(match self.store.update_token(&update).await? {
            false => Swept::Changed,
            true if had => Swept::Removed,
            true => Swept::Unmarked,
        })
    }
}

/// Fills `update` with `data` sealed as `stored`'s was (same token, same binding) and its
/// fingerprint and search index values rendered again. Templates rendered over a card without
/// its CVC already; one that no longer renders (an index written before that rule) drops its
/// values rather than keep any derived from the CVC.
fn resealed(
    key: &DataKey,
    stored: &StoredToken,
    data: &Secret<serde_json::Value>,
    update: &mut TokenUpdate,
) -> Result<(), VaultError> {
    update.ciphertext = Some(seal_data(
        key,
        stored.tenant_id,
        &stored.id,
        stored.destinations.as_ref(),
        data.expose(),
    )?);
    let mut errors = ValidationErrors::new();
    let indexing = Indexing::read(
        stored.token_type,
        stored.search_indexes.clone(),
        stored.fingerprint_expression.clone(),
        data.expose(),
        &stored.metadata,
        &mut errors,
    );
    let hashes = if errors.is_empty() {
        update.fingerprint = Some(key.fingerprint(indexing.fingerprint_input.expose()));
        indexing.search_hashes(key)
    } else {
        Vec::new()
    };
    update.search = Some((stored.search_indexes.clone(), hashes));
    Ok(())
}
