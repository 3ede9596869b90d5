//! The recorder: requests hand their events to one writer task per process, which commits
//! whatever has accumulated in one transaction (group commit), then writes the committed events
//! to the optional stream. In [`Durability::Sync`] a request waits for the commit of its
//! events before it answers; in [`Durability::Async`] it does not, and the writer commits
//! within moments (it never waits to fill a batch), so a crash loses at most what was still
//! queued.

use std::{
    io::Write,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use tokio::sync::{mpsc, oneshot};

use super::event::{AuditEvent, ChainedEvent};
use crate::store::{AuditStore, StoreError};

/// Most events committed in one transaction.
const MAX_BATCH: usize = 2048;
/// Queued submissions before submitters wait (backpressure when the database is slow).
const QUEUE: usize = 16 * 1024;
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

enum Message {
    Events {
        events: Vec<AuditEvent>,
        done: Option<oneshot::Sender<Result<(), String>>>,
    },
    Flush(oneshot::Sender<()>),
}

/// Where events go. Cheap to clone; [`AuditLog::off`] records nothing.
#[derive(Clone, Debug)]
pub struct AuditLog {
    inner: Option<(mpsc::Sender<Message>, Durability)>,
    stats: Arc<Counters>,
}

/// The writer's running totals, shared with every [`AuditLog`] clone.
#[derive(Debug, Default)]
struct Counters {
    events: AtomicU64,
    batches: AtomicU64,
    failures: AtomicU64,
    commit_micros: AtomicU64,
}

/// What the writer has done so far, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditStats {
    /// Events committed.
    pub events_committed: u64,
    /// Transactions committed.
    pub batches_committed: u64,
    /// Commit attempts that failed (and were retried).
    pub commit_failures: u64,
    /// Time spent in successful commits, in microseconds.
    pub commit_micros: u64,
    /// Submissions waiting for the writer now.
    pub queued: u64,
}

impl AuditLog {
    /// Records nothing (embedding programs and measurements without a trail).
    pub fn off() -> Self {
        Self {
            inner: None,
            stats: Arc::default(),
        }
    }

    /// The writer's totals and queue depth (`None` when off).
    pub fn stats(&self) -> Option<AuditStats> {
        let (tx, _) = self.inner.as_ref()?;
        let c = &self.stats;
        Some(AuditStats {
            events_committed: c.events.load(Ordering::Relaxed),
            batches_committed: c.batches.load(Ordering::Relaxed),
            commit_failures: c.failures.load(Ordering::Relaxed),
            commit_micros: c.commit_micros.load(Ordering::Relaxed),
            queued: (tx.max_capacity() - tx.capacity()) as u64,
        })
    }

    /// A recorder over `store`, and the writer that must be spawned for it to make progress.
    /// Committed events are also written, one JSON object per line, to `stream`.
    pub fn new(
        store: Arc<dyn AuditStore>,
        durability: Durability,
        stream: Option<Box<dyn Write + Send>>,
    ) -> (Self, AuditWriter) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let stats = Arc::<Counters>::default();
        (
            Self {
                inner: Some((tx, durability)),
                stats: stats.clone(),
            },
            AuditWriter {
                rx,
                store,
                stream,
                stats,
            },
        )
    }

    /// Whether events are recorded at all.
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// Records `events`; in sync mode, returns once they are committed.
    pub async fn record(&self, events: Vec<AuditEvent>) -> Result<(), AuditError> {
        self.submit(events).await?.committed().await
    }

    /// Hands `events` to the writer and returns at once (unless the queue is full); in sync
    /// mode, [`Pending::committed`] then waits for their commit. The gateway submits a
    /// request's events as soon as it has them and waits just before answering, so the
    /// commit overlaps the destination's round trip.
    pub async fn submit(&self, events: Vec<AuditEvent>) -> Result<Pending, AuditError> {
        let Some((tx, durability)) = &self.inner else {
            return Ok(Pending(None));
        };
        if events.is_empty() {
            return Ok(Pending(None));
        }
        match durability {
            Durability::Async => {
                tx.send(Message::Events { events, done: None })
                    .await
                    .map_err(|_| AuditError::Stopped)?;
                Ok(Pending(None))
            }
            Durability::Sync => {
                let (done, committed) = oneshot::channel();
                tx.send(Message::Events {
                    events,
                    done: Some(done),
                })
                .await
                .map_err(|_| AuditError::Stopped)?;
                Ok(Pending(Some(committed)))
            }
        }
    }

    /// Returns once every event submitted before the call is committed (graceful shutdown,
    /// and the end of a command-line run).
    pub async fn flush(&self) {
        if let Some((tx, _)) = &self.inner {
            let (done, flushed) = oneshot::channel();
            if tx.send(Message::Flush(done)).await.is_ok() {
                let _ = flushed.await;
            }
        }
    }
}

/// Events handed to the writer; in sync mode, their commit can be awaited.
#[derive(Debug)]
#[must_use = "in sync mode the events are not known to be committed until `committed` returns"]
pub struct Pending(Option<oneshot::Receiver<Result<(), String>>>);

impl Pending {
    /// Nothing to wait for.
    pub fn none() -> Self {
        Pending(None)
    }

    /// Returns once the events are committed (at once in async mode, or when there were
    /// none).
    pub async fn committed(self) -> Result<(), AuditError> {
        let Some(committed) = self.0 else {
            return Ok(());
        };
        match tokio::time::timeout(SYNC_WAIT, committed).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(AuditError::Unavailable(e)),
            Ok(Err(_)) => Err(AuditError::Stopped),
            Err(_) => Err(AuditError::Unavailable(format!(
                "not committed within {} s",
                SYNC_WAIT.as_secs()
            ))),
        }
    }
}

/// The task that commits events; run it with `tokio::spawn(writer.run())`. It ends when every
/// [`AuditLog`] clone is dropped, after committing what was queued.
pub struct AuditWriter {
    rx: mpsc::Receiver<Message>,
    store: Arc<dyn AuditStore>,
    stream: Option<Box<dyn Write + Send>>,
    stats: Arc<Counters>,
}

impl std::fmt::Debug for AuditWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditWriter")
            .field("stream", &self.stream.is_some())
            .finish_non_exhaustive()
    }
}

impl AuditWriter {
    /// Commits batches until the channel closes.
    pub async fn run(mut self) {
        let mut events = Vec::new();
        let mut waiters = Vec::new();
        let mut flushes = Vec::new();
        while let Some(first) = self.rx.recv().await {
            let mut next = Some(first);
            while let Some(message) = next.take() {
                match message {
                    Message::Events {
                        events: mut e,
                        done,
                    } => {
                        events.append(&mut e);
                        waiters.extend(done);
                    }
                    Message::Flush(done) => flushes.push(done),
                }
                if events.len() < MAX_BATCH {
                    next = self.rx.try_recv().ok();
                }
            }
            self.commit(&mut events, &mut waiters).await;
            for done in flushes.drain(..) {
                let _ = done.send(());
            }
        }
    }

    /// Commits `events`, retrying until it succeeds; waiters learn of the first failure (their
    /// requests answer 503) but the events are kept and written once the store recovers.
    async fn commit(
        &mut self,
        events: &mut Vec<AuditEvent>,
        waiters: &mut Vec<oneshot::Sender<Result<(), String>>>,
    ) {
        if events.is_empty() {
            return;
        }
        let mut backoff = Duration::from_millis(50);
        loop {
            let started = std::time::Instant::now();
            match self.store.append_audit_events(events).await {
                Ok(chained) => {
                    let micros = started.elapsed().as_micros() as u64;
                    self.stats
                        .events
                        .fetch_add(chained.len() as u64, Ordering::Relaxed);
                    self.stats.batches.fetch_add(1, Ordering::Relaxed);
                    self.stats
                        .commit_micros
                        .fetch_add(micros, Ordering::Relaxed);
                    tracing::debug!(
                        events = chained.len(),
                        waiters = waiters.len(),
                        micros,
                        "audit batch committed"
                    );
                    for done in waiters.drain(..) {
                        let _ = done.send(Ok(()));
                    }
                    events.clear();
                    self.stream(&chained);
                    return;
                }
                Err(e) => {
                    self.stats.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(error = %e, events = events.len(), "cannot write audit events; retrying");
                    if let StoreError::Conflict(_) = e {
                        // An event id already stored: a commit that succeeded but reported
                        // failure. Nothing in this batch can be written again as it is.
                        tracing::error!("dropping an audit batch whose events are already stored");
                        events.clear();
                        for done in waiters.drain(..) {
                            let _ = done.send(Ok(()));
                        }
                        return;
                    }
                    for done in waiters.drain(..) {
                        let _ = done.send(Err(e.to_string()));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    fn stream(&mut self, chained: &[ChainedEvent]) {
        let Some(out) = self.stream.as_mut() else {
            return;
        };
        let mut buf = Vec::with_capacity(chained.len() * 400);
        for event in chained {
            if serde_json::to_writer(&mut buf, event).is_ok() {
                buf.push(b'\n');
            }
        }
        if let Err(e) = out.write_all(&buf).and_then(|()| out.flush()) {
            tracing::error!(error = %e, "cannot write to the audit stream");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex,
    };

    use async_trait::async_trait;
    use time::OffsetDateTime;

    use super::*;
    use crate::{
        audit::{self, Actor, AuditAction, AuditFilter, ChainHead},
        ids::TenantId,
        pagination::{Page, PageRequest},
    };

    /// A store that keeps one chain in memory, counts transactions, and fails the first
    /// `failures` appends.
    #[derive(Default)]
    struct Memory {
        head: Mutex<Option<ChainHead>>,
        events: Mutex<Vec<ChainedEvent>>,
        appends: AtomicUsize,
        failures: AtomicUsize,
    }

    #[async_trait]
    impl AuditStore for Memory {
        async fn append_audit_events(
            &self,
            events: &[AuditEvent],
        ) -> Result<Vec<ChainedEvent>, StoreError> {
            if self
                .failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return Err(StoreError::Unavailable("down".into()));
            }
            self.appends.fetch_add(1, Ordering::SeqCst);
            // Let submissions pile up behind a slow transaction.
            tokio::time::sleep(Duration::from_millis(5)).await;
            let mut head = self.head.lock().expect("head");
            let head = head.get_or_insert_with(|| ChainHead::empty(events[0].tenant_id));
            let chained = audit::extend(head, events);
            self.events
                .lock()
                .expect("events")
                .extend(chained.iter().cloned());
            Ok(chained)
        }
        async fn list_audit_events(
            &self,
            _: TenantId,
            _: &AuditFilter,
            _: PageRequest,
        ) -> Result<Page<ChainedEvent>, StoreError> {
            unimplemented!("not used by the writer")
        }
        async fn audit_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
            Ok(self.head.lock().expect("head").iter().cloned().collect())
        }
        async fn audit_chain_page(
            &self,
            _: Option<TenantId>,
            after: i64,
            up_to: i64,
            limit: u32,
        ) -> Result<Vec<ChainedEvent>, StoreError> {
            Ok(self
                .events
                .lock()
                .expect("events")
                .iter()
                .filter(|e| e.seq > after && e.seq <= up_to)
                .take(limit as usize)
                .cloned()
                .collect())
        }
        async fn prune_audit_events(&self, _: OffsetDateTime) -> Result<u64, StoreError> {
            Ok(0)
        }
    }

    fn event(tenant: TenantId) -> AuditEvent {
        AuditEvent::success(
            tenant,
            AuditAction::TokenRead,
            Actor::Anonymous,
            vec![uuid::Uuid::new_v4()],
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_commits_and_form_one_chain() {
        let store = Arc::new(Memory::default());
        let (log, writer) = AuditLog::new(store.clone(), Durability::Sync, None);
        tokio::spawn(writer.run());
        let tenant = TenantId::new();
        let mut tasks = Vec::new();
        for _ in 0..200 {
            let log = log.clone();
            tasks.push(tokio::spawn(async move {
                log.record(vec![event(tenant)]).await
            }));
        }
        for task in tasks {
            task.await
                .expect("task")
                .expect("committed before returning");
        }
        assert_eq!(store.events.lock().expect("events").len(), 200);
        let stats = log.stats().expect("on");
        assert_eq!(stats.events_committed, 200);
        assert_eq!(stats.queued, 0);
        let appends = store.appends.load(Ordering::SeqCst);
        assert_eq!(stats.batches_committed, appends as u64);
        assert!(
            appends < 200,
            "grouped: {appends} transactions for 200 requests"
        );
        let report = audit::verify(store.as_ref(), Some(tenant))
            .await
            .expect("verify");
        assert!(report.ok() && report.events_checked == 200, "{report:?}");
    }

    #[tokio::test]
    async fn a_failed_commit_answers_the_waiter_and_is_retried() {
        let store = Arc::new(Memory::default());
        store.failures.store(1, Ordering::SeqCst);
        let stream = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("stream").extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (log, writer) = AuditLog::new(
            store.clone(),
            Durability::Sync,
            Some(Box::new(Shared(stream.clone()))),
        );
        tokio::spawn(writer.run());
        let tenant = TenantId::new();
        let refused = log.record(vec![event(tenant)]).await;
        assert!(
            matches!(refused, Err(AuditError::Unavailable(_))),
            "{refused:?}"
        );
        // The writer kept the event and wrote it once the store recovered.
        log.flush().await;
        assert_eq!(store.events.lock().expect("events").len(), 1);
        log.record(vec![event(tenant)]).await.expect("committed");
        assert_eq!(log.stats().expect("on").commit_failures, 1);
        let lines = stream.lock().expect("stream").clone();
        assert_eq!(lines.iter().filter(|b| **b == b'\n').count(), 2);
    }

    #[tokio::test]
    async fn async_mode_returns_at_once_and_flush_commits() {
        let store = Arc::new(Memory::default());
        let (log, writer) = AuditLog::new(store.clone(), Durability::Async, None);
        let tenant = TenantId::new();
        // The writer is not running yet: async submissions still return.
        log.record(vec![event(tenant), event(tenant)])
            .await
            .expect("queued");
        assert!(store.events.lock().expect("events").is_empty());
        tokio::spawn(writer.run());
        log.flush().await;
        assert_eq!(store.events.lock().expect("events").len(), 2);
        // Off records nothing and never fails.
        AuditLog::off()
            .record(vec![event(tenant)])
            .await
            .expect("off");
        assert!(AuditLog::off().stats().is_none());
    }
}
