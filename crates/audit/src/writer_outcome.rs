//! What the writer does once a commit returns: counts and streams the blocks written, holds
//! the events of chains that failed for the next attempt, and answers the lanes' waiters.

use std::{collections::HashMap, io::Write, sync::atomic::Ordering};

use super::{AuditWriter, Batch, MAX_HELD};
use crate::{
    block::AuditBlock,
    encoded::{EncodedEvent, EncodedEvents},
    store::ChainAppend,
};
use tessera_domain::{error::StoreError, ids::TenantId};

impl AuditWriter {
    /// Counts and streams the blocks written; returns the chains that failed, with why.
    pub(super) fn written(
        &mut self,
        outcomes: Vec<ChainAppend>,
    ) -> HashMap<Option<TenantId>, String> {
        let mut failed = HashMap::new();
        let mut blocks = Vec::new();
        for ChainAppend { tenant_id, result } in outcomes {
            match result {
                Ok(written) => blocks.extend(written),
                Err(e) => {
                    self.failed_chain(tenant_id, &e);
                    failed.insert(tenant_id, e.to_string());
                }
            }
        }
        let events: usize = blocks.iter().map(|b| b.hashes.len() / 32).sum();
        self.shared
            .stats
            .events
            .fetch_add(events as u64, Ordering::Relaxed);
        tracing::debug!(events, "audit batch committed");
        self.stream(&blocks);
        failed
    }

    /// Keeps the events of `failed` chains (held ones first) for the next attempt, dropping
    /// the oldest beyond [`MAX_HELD`].
    pub(super) fn hold_failed(
        &mut self,
        held: &EncodedEvents,
        batch: &Batch,
        failed: &HashMap<Option<TenantId>, String>,
    ) {
        let mut kept = EncodedEvents::default();
        if !failed.is_empty() {
            let all = held.iter().chain(batch.live());
            let failing: Vec<EncodedEvent<'_>> =
                all.filter(|e| failed.contains_key(&e.chain)).collect();
            let dropped = failing.len().saturating_sub(MAX_HELD);
            if dropped > 0 {
                self.shared
                    .stats
                    .dropped
                    .fetch_add(dropped as u64, Ordering::Relaxed);
                tracing::error!(
                    dropped,
                    "too many audit events held for chains that cannot be written: the oldest were dropped"
                );
            }
            for e in &failing[dropped..] {
                kept.push_encoded(e);
            }
        }
        self.shared
            .stats
            .held
            .store(kept.len() as u64, Ordering::Relaxed);
        self.held = kept;
    }

    /// Answers every lane taken in `batch`, and hands its buffer back for reuse.
    pub(super) fn answer(&mut self, batch: Batch, failed: &HashMap<Option<TenantId>, String>) {
        for mut taken in batch.taken {
            let mut failures: Vec<(u64, String)> = if failed.is_empty() {
                Vec::new()
            } else {
                taken
                    .live()
                    .filter(|(_, ticket)| *ticket != 0)
                    .filter_map(|(e, ticket)| Some((ticket, failed.get(&e.chain)?.clone())))
                    .collect()
            };
            // Tickets rise through a lane: one failure per ticket.
            failures.dedup_by_key(|(ticket, _)| *ticket);
            taken.lane.answer(taken.last_ticket, failures);
            taken.events.clear();
            self.spares.push(taken.events);
        }
    }

    pub(super) fn failed_chain(&self, tenant: Option<TenantId>, e: &StoreError) {
        self.shared.stats.failures.fetch_add(1, Ordering::Relaxed);
        let chain = tenant.map_or_else(|| "deployment".to_string(), |t| t.to_string());
        if let StoreError::Conflict(_) = e {
            self.shared.stats.conflicts.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                chain,
                error = %e,
                "AUDIT CHAIN CONFLICT: a record already holds this chain's next position (planted, or left by a failed write). Its events are held and retried and its requests in sync mode answer 503; other chains are unaffected. Run `api audit verify` and remove the record it names."
            );
        } else {
            tracing::error!(chain, error = %e, "cannot write this audit chain's events; retrying");
        }
    }

    pub(super) fn stream(&mut self, blocks: &[AuditBlock]) {
        let Some(out) = self.stream.as_mut() else {
            return;
        };
        let mut buf = Vec::new();
        for block in blocks {
            for event in block.events().unwrap_or_default() {
                if serde_json::to_writer(&mut buf, &event).is_ok() {
                    buf.push(b'\n');
                }
            }
        }
        if buf.is_empty() {
            return;
        }
        if let Err(e) = out.write_all(&buf).and_then(|()| out.flush()) {
            tracing::error!(error = %e, "cannot write to the audit stream");
        }
    }
}
