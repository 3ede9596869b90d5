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
    list::list,
    store::AuditStore,
    verify::verify,
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
    let trail = Trail {
        store: store.clone(),
        recording: Some(Recording {
            shared: shared.clone(),
            durability,
            _open: Open(shared.clone()),
        }),
    };
    (
        AuditLog::new(Arc::new(trail)),
        AuditWriter::new(shared, store, stream),
    )
}

/// A trail that records nothing but lists, verifies and prunes what `store` holds (a process
/// run with the trail off still answers `GET /audit-events` and applies retention).
pub fn reader(store: Arc<dyn AuditStore>) -> AuditLog {
    AuditLog::new(Arc::new(Trail {
        store,
        recording: None,
    }))
}

/// The trail kept in `store`, recording into lanes read by one [`AuditWriter`] unless it only
/// reads.
struct Trail {
    store: Arc<dyn AuditStore>,
    recording: Option<Recording>,
}

/// Where a recording trail's events go.
#[derive(Debug)]
struct Recording {
    shared: Arc<Shared>,
    durability: Durability,
    /// Dropped with the last [`AuditLog`] holding this trail: tells the writer to finish.
    _open: Open,
}

impl fmt::Debug for Trail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trail")
            .field("recording", &self.recording.as_ref().map(|r| r.durability))
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

impl Recording {
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
}

#[async_trait]
impl AuditTrail for Trail {
    fn is_on(&self) -> bool {
        self.recording.is_some()
    }

    fn stats(&self) -> Option<AuditStats> {
        self.recording.as_ref().map(Recording::totals)
    }

    async fn submit(
        &self,
        events: Vec<AuditEvent>,
    ) -> Result<Option<Box<dyn CommitWait>>, AuditError> {
        let Some(recording) = &self.recording else {
            return Ok(None);
        };
        let shared = &recording.shared;
        if shared.stopped.load(Ordering::SeqCst) {
            return Err(AuditError::Stopped);
        }
        let wait = recording.durability == Durability::Sync;
        let ticket = shared.submit(events, wait).await;
        Ok(ticket.map(|(lane, ticket)| {
            Box::new(Waiting {
                shared: shared.clone(),
                lane,
                ticket,
            }) as Box<dyn CommitWait>
        }))
    }

    async fn flush(&self) {
        if let Some(recording) = &self.recording {
            recording.flush().await;
        }
    }

    async fn head(&self, tenant: TenantId) -> Result<(i64, [u8; 32]), StoreError> {
        Ok(self
            .store
            .audit_chain_head(Some(tenant))
            .await?
            .map_or((0, crate::head::GENESIS), |h| (h.last_seq, h.last_hash)))
    }

    async fn list(
        &self,
        tenant: TenantId,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<ChainedEvent>, StoreError> {
        list(self.store.as_ref(), tenant, filter, page).await
    }

    async fn verify(&self, tenant: Option<TenantId>) -> Result<VerifyReport, StoreError> {
        verify(self.store.as_ref(), tenant).await
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
