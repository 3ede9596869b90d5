//! The recorder: what the edges (the management API, the gateway) hand their events to.
//!
//! Recording encodes the events into the calling thread's lane ([`crate::lanes`]) and returns;
//! one writer per process ([`AuditWriter`]) commits whatever the lanes hold in one transaction
//! (group commit), one block per chain, then writes the committed events to the optional
//! stream. In [`Durability::Sync`] a request waits for the commit of its events before it
//! answers; in [`Durability::Async`] it does not, and a crash loses at most what was still
//! queued. An event is acknowledged only once its own chain's block is written.

use std::{
    fmt,
    io::Write,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use async_trait::async_trait;
use tessera_domain::{
    audit::{
        AuditError, AuditEvent, AuditFilter, AuditLog, AuditStats, AuditTrail, ChainedEvent,
        CommitWait, Durability, VerifyReport,
    },
    error::StoreError,
    ids::TenantId,
    pagination::{Page, PageRequest},
};
use time::OffsetDateTime;

use crate::{
    lanes::{Lane, Shared},
    store::AuditStore,
    writer::AuditWriter,
};

/// A waiting request gives up after this long (the writer keeps its events and retries).
const SYNC_WAIT: Duration = Duration::from_secs(5);

/// A trail over `store`: the [`AuditLog`] the vault and the edges record through, and the
/// writer that must be run for it to make progress (on a thread of its own:
/// [`AuditWriter::spawn`]). Committed events are also written, one JSON object per line, to
/// `stream`.
pub fn start(
    store: Arc<dyn AuditStore>,
    durability: Durability,
    stream: Option<Box<dyn Write + Send>>,
) -> (AuditLog, AuditWriter) {
    let shared = Arc::new(Shared::default());
    let recorder = Recorder {
        store: store.clone(),
        shared: shared.clone(),
        durability,
        _open: Open(shared.clone()),
    };
    (
        AuditLog::new(Arc::new(recorder)),
        AuditWriter::new(shared, store, stream),
    )
}

/// A trail that records nothing but lists, verifies and prunes what `store` holds (a process
/// run with the trail off still answers `GET /audit-events` and applies retention).
pub fn reader(store: Arc<dyn AuditStore>) -> AuditLog {
    AuditLog::new(Arc::new(Reader { store }))
}

/// Records into the lanes of `shared`, read by one [`AuditWriter`].
struct Recorder {
    store: Arc<dyn AuditStore>,
    shared: Arc<Shared>,
    durability: Durability,
    /// Dropped with the last [`AuditLog`] holding this recorder: tells the writer to finish.
    _open: Open,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

/// Tells the writer, when dropped, that no recorder is left.
#[derive(Debug)]
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
        self.0.wake.notify_one();
    }
}

impl Recorder {
    fn totals(&self) -> AuditStats {
        let shared = &self.shared;
        let c = &shared.stats;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        AuditStats {
            events_committed: load(&c.events),
            batches_committed: load(&c.batches),
            commit_failures: load(&c.failures),
            commit_micros: load(&c.commit_micros),
            queued: shared.queued(),
            chain_conflicts: load(&c.conflicts),
            events_held: load(&c.held),
            events_dropped: load(&c.dropped),
            denials_folded: load(&c.folded),
            windows_held: load(&c.windows),
            window_micros: load(&c.window_micros),
        }
    }
}

#[async_trait]
impl AuditTrail for Recorder {
    fn is_on(&self) -> bool {
        true
    }

    fn stats(&self) -> Option<AuditStats> {
        Some(self.totals())
    }

    async fn submit(
        &self,
        events: Vec<AuditEvent>,
    ) -> Result<Option<Box<dyn CommitWait>>, AuditError> {
        if self.shared.stopped.load(Ordering::SeqCst) {
            return Err(AuditError::Stopped);
        }
        let wait = self.durability == Durability::Sync;
        let ticket = self.shared.submit(events, wait).await;
        Ok(ticket.map(|(lane, ticket)| {
            Box::new(Waiting {
                shared: self.shared.clone(),
                lane,
                ticket,
            }) as Box<dyn CommitWait>
        }))
    }

    async fn flush(&self) {
        let shared = &self.shared;
        let want = shared.flushes.fetch_add(1, Ordering::SeqCst) + 1;
        shared.wake.notify_one();
        loop {
            let notified = shared.flush_done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if shared.flushed.load(Ordering::SeqCst) >= want
                || shared.stopped.load(Ordering::SeqCst)
            {
                return;
            }
            notified.await;
        }
    }

    async fn list(
        &self,
        tenant: TenantId,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<ChainedEvent>, StoreError> {
        crate::list(self.store.as_ref(), tenant, filter, page).await
    }

    async fn verify(&self, tenant: Option<TenantId>) -> Result<VerifyReport, StoreError> {
        crate::verify(self.store.as_ref(), tenant).await
    }

    async fn prune(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        self.store.prune_audit_events(before).await
    }
}

/// Reads what a store holds; records nothing.
struct Reader {
    store: Arc<dyn AuditStore>,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

#[async_trait]
impl AuditTrail for Reader {
    fn is_on(&self) -> bool {
        false
    }

    fn stats(&self) -> Option<AuditStats> {
        None
    }

    async fn submit(
        &self,
        _events: Vec<AuditEvent>,
    ) -> Result<Option<Box<dyn CommitWait>>, AuditError> {
        Ok(None)
    }

    async fn flush(&self) {}

    async fn list(
        &self,
        tenant: TenantId,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<ChainedEvent>, StoreError> {
        crate::list(self.store.as_ref(), tenant, filter, page).await
    }

    async fn verify(&self, tenant: Option<TenantId>) -> Result<VerifyReport, StoreError> {
        crate::verify(self.store.as_ref(), tenant).await
    }

    async fn prune(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        self.store.prune_audit_events(before).await
    }
}

/// A sync-mode request's events, waiting for their commit.
#[derive(Debug)]
struct Waiting {
    shared: Arc<Shared>,
    lane: Arc<Lane>,
    ticket: u64,
}

#[async_trait]
impl CommitWait for Waiting {
    async fn committed(self: Box<Self>) -> Result<(), AuditError> {
        match self.lane.wait(&self.shared, self.ticket, SYNC_WAIT).await {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(AuditError::Unavailable(e)),
            None if self.shared.stopped.load(Ordering::SeqCst) => Err(AuditError::Stopped),
            None => Err(AuditError::Unavailable(format!(
                "not committed within {} s",
                SYNC_WAIT.as_secs()
            ))),
        }
    }
}
