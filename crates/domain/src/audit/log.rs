//! The recorder: what the edges (the management API, the gateway) hand their events to.
//!
//! Recording encodes the events into the calling thread's lane ([`super::lanes`]) and returns;
//! one writer per process ([`AuditWriter`]) commits whatever the lanes hold in one transaction
//! (group commit), one block per chain, then writes the committed events to the optional
//! stream. In [`Durability::Sync`] a request waits for the commit of its events before it
//! answers; in [`Durability::Async`] it does not, and a crash loses at most what was still
//! queued. An event is acknowledged only once its own chain's block is written.

use std::{
    io::Write,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use super::{
    event::AuditEvent,
    lanes::{Lane, Shared},
    store::AuditStore,
    writer::AuditWriter,
};

/// A waiting request gives up after this long (the writer keeps its events and retries).
const SYNC_WAIT: Duration = Duration::from_secs(5);

/// When a request's events must be committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Before the request's response is sent.
    Sync,
    /// Soon after (within 1 s while the database keeps up); flushed on graceful shutdown.
    Async,
}

/// Why events could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The writer could not commit in time; the events stay queued and are retried.
    #[error("the audit trail could not be written in time: {0}")]
    Unavailable(String),
    /// The writer has stopped (the process is shutting down).
    #[error("the audit writer has stopped")]
    Stopped,
}

/// Where events go. Cheap to clone; [`AuditLog::off`] records nothing.
#[derive(Clone, Debug)]
pub struct AuditLog {
    inner: Option<Inner>,
}

#[derive(Clone, Debug)]
struct Inner {
    shared: Arc<Shared>,
    durability: Durability,
    /// Held by every clone; the last one dropped tells the writer to finish.
    _open: Arc<Open>,
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

/// What the writer has done so far, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditStats {
    /// Events committed.
    pub events_committed: u64,
    /// Transactions committed.
    pub batches_committed: u64,
    /// Chain appends that failed (and were retried).
    pub commit_failures: u64,
    /// Time spent in successful commits, in microseconds.
    pub commit_micros: u64,
    /// Events waiting for the writer now.
    pub queued: u64,
    /// Chain appends refused because a record already held the chain's next position — a
    /// sign of tampering or of a failed write: alert on any.
    pub chain_conflicts: u64,
    /// Events of chains that could not be written, held for retry, now.
    pub events_held: u64,
    /// Held events dropped because too many were held.
    pub events_dropped: u64,
    /// Refusals folded into aggregate events.
    pub denials_folded: u64,
    /// Commits held open for more events (under load).
    pub windows_held: u64,
    /// Time commits were held open, in microseconds.
    pub window_micros: u64,
}

impl AuditLog {
    /// Records nothing (embedding programs and measurements without a trail).
    pub fn off() -> Self {
        Self { inner: None }
    }

    /// A recorder over `store`, and the writer that must be run for it to make progress
    /// (on a thread of its own: `tokio::spawn(writer.run())` on a runtime that does nothing
    /// else is the intended use). Committed events are also written, one JSON object per
    /// line, to `stream`.
    pub fn new(
        store: Arc<dyn AuditStore>,
        durability: Durability,
        stream: Option<Box<dyn Write + Send>>,
    ) -> (Self, AuditWriter) {
        let shared = Arc::new(Shared::default());
        (
            Self {
                inner: Some(Inner {
                    shared: shared.clone(),
                    durability,
                    _open: Arc::new(Open(shared.clone())),
                }),
            },
            AuditWriter::new(shared, store, stream),
        )
    }

    /// The writer's totals and queue depth (`None` when off).
    pub fn stats(&self) -> Option<AuditStats> {
        let shared = &self.inner.as_ref()?.shared;
        let c = &shared.stats;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Some(AuditStats {
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
        })
    }

    /// Whether events are recorded at all.
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// Records `events`; in sync mode, returns once they are committed.
    pub async fn record(&self, events: Vec<AuditEvent>) -> Result<(), AuditError> {
        self.submit(events).await?.committed().await
    }

    /// Hands `events` to the writer and returns at once (unless the writer is far behind); in
    /// sync mode, [`Pending::committed`] then waits for their commit. The gateway submits a
    /// request's events as soon as it has them and waits just before answering, so the
    /// commit overlaps the destination's round trip.
    pub async fn submit(&self, events: Vec<AuditEvent>) -> Result<Pending, AuditError> {
        let Some(inner) = &self.inner else {
            return Ok(Pending(None));
        };
        if events.is_empty() {
            return Ok(Pending(None));
        }
        if inner.shared.stopped.load(Ordering::SeqCst) {
            return Err(AuditError::Stopped);
        }
        let wait = inner.durability == Durability::Sync;
        let ticket = inner.shared.submit(events, wait).await;
        Ok(Pending(ticket.map(|(lane, ticket)| Waiting {
            shared: inner.shared.clone(),
            lane,
            ticket,
        })))
    }

    /// Returns once every event submitted before the call is committed, or the writer gave
    /// up on the chains it could not write (graceful shutdown, the end of a command-line run).
    pub async fn flush(&self) {
        let Some(inner) = &self.inner else {
            return;
        };
        let shared = &inner.shared;
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

/// Events handed to the writer; in sync mode, their commit can be awaited.
#[derive(Debug)]
#[must_use = "in sync mode the events are not known to be committed until `committed` returns"]
pub struct Pending(Option<Waiting>);

#[derive(Debug)]
struct Waiting {
    shared: Arc<Shared>,
    lane: Arc<Lane>,
    ticket: u64,
}

impl Pending {
    /// Nothing to wait for.
    pub fn none() -> Self {
        Pending(None)
    }

    /// Returns once the events are committed (at once in async mode, or when there were
    /// none, or when they were folded into an aggregate refusal).
    pub async fn committed(self) -> Result<(), AuditError> {
        let Some(w) = self.0 else {
            return Ok(());
        };
        match w.lane.wait(&w.shared, w.ticket, SYNC_WAIT).await {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(AuditError::Unavailable(e)),
            None if w.shared.stopped.load(Ordering::SeqCst) => Err(AuditError::Stopped),
            None => Err(AuditError::Unavailable(format!(
                "not committed within {} s",
                SYNC_WAIT.as_secs()
            ))),
        }
    }
}
