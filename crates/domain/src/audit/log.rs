//! The recorder: requests hand their events to one writer task per process, which commits
//! whatever has accumulated in one transaction (group commit), one block per chain, then
//! writes the committed events to the optional stream. In [`Durability::Sync`] a request
//! waits for the commit of its events before it answers; in [`Durability::Async`] it does not,
//! and a crash loses at most what was still queued.
//!
//! A commit's fixed cost (a transaction, the chain heads) dwarfs its cost per event, so under
//! load the writer holds a commit that nobody waits on ([`Durability::Async`]) open for a short
//! window ([`Arrivals`]) until about [`TARGET_BATCH`] events are in it: the window is sized from the recent arrival rate and
//! never exceeds [`MAX_WINDOW`]. A window also ends when the next event is overdue (twice the
//! recent gap between events). When events arrive too slowly to add even one in the longest
//! window, nothing is held: a lone request's event is committed at once; and a window that
//! gained nothing (its requests' callers were all waiting on this very commit) makes the next
//! batches skip windows, for twice as many each time (docs/operations.md "Audit trail").
//!
//! A batch with a waiting caller ([`Durability::Sync`]) is never held: measured at 32
//! connections, holding it filled commits (30 events instead of 8) but every caller in it sat
//! idle through the window, and throughput fell to a quarter. Under load such a batch grows by
//! itself, from what arrives while the previous commit runs.
//!
//! An event is acknowledged only once its own chain's block is written. A chain that cannot be
//! extended (a record already at its next position: planted, or left by a failure) fails
//! alone: its waiting requests are answered 503, its events are held and retried, a metric
//! and a loud log line say so — and the other chains of the batch commit (attack finding 2:
//! one planted row used to make the writer drop every tenant's batch and report success).
//! Floods of identical refusals are folded ([`super::denials`]).

use std::{
    collections::HashSet,
    io::Write,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use tokio::{
    sync::{mpsc, oneshot},
    time::Instant,
};

use super::{
    denials::Denials,
    event::{AuditEvent, ChainedEvent},
    store::{AuditStore, ChainAppend},
};
use crate::{error::StoreError, ids::TenantId};

/// Most events committed in one transaction.
const MAX_BATCH: usize = 2048;
/// How many events a commit should carry under load before it is sent.
const TARGET_BATCH: usize = 128;
/// The longest a commit is held open for more events.
const MAX_WINDOW: Duration = Duration::from_millis(2);
/// Most batches committed at once after a window that gained nothing, before the next try.
const MAX_SKIP: u32 = 64;
/// Queued submissions before submitters wait (backpressure when the database is slow).
const QUEUE: usize = 16 * 1024;
/// A waiting request gives up after this long (the writer keeps its events and retries).
const SYNC_WAIT: Duration = Duration::from_secs(5);
/// Most events held for chains that could not be written; beyond, the oldest are dropped
/// (counted, and logged as errors).
const MAX_HELD: usize = 100_000;
/// First and longest pause before retrying held events.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);
/// Attempts made at held events once every recorder is gone (shutdown), before giving up.
const RETRIES_AT_SHUTDOWN: u32 = 5;

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
    conflicts: AtomicU64,
    held: AtomicU64,
    dropped: AtomicU64,
    folded: AtomicU64,
    windows: AtomicU64,
    window_micros: AtomicU64,
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
    /// Submissions waiting for the writer now.
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
        Self {
            inner: None,
            stats: Arc::default(),
        }
    }

    /// The writer's totals and queue depth (`None` when off).
    pub fn stats(&self) -> Option<AuditStats> {
        let (tx, _) = self.inner.as_ref()?;
        let c = &self.stats;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Some(AuditStats {
            events_committed: load(&c.events),
            batches_committed: load(&c.batches),
            commit_failures: load(&c.failures),
            commit_micros: load(&c.commit_micros),
            queued: (tx.max_capacity() - tx.capacity()) as u64,
            chain_conflicts: load(&c.conflicts),
            events_held: load(&c.held),
            events_dropped: load(&c.dropped),
            denials_folded: load(&c.folded),
            windows_held: load(&c.windows),
            window_micros: load(&c.window_micros),
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
                held: Vec::new(),
                denials: Denials::default(),
                arrivals: Arrivals::default(),
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

    /// Returns once every event submitted before the call is committed, or the writer gave
    /// up on the chains it could not write (graceful shutdown, the end of a command-line run).
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
    /// none, or when they were folded into an aggregate refusal).
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

/// A request's events in a batch: the chains they go to, and who waits.
struct Waiter {
    chains: Vec<Option<TenantId>>,
    done: oneshot::Sender<Result<(), String>>,
}

/// What one turn of the writer commits.
#[derive(Default)]
struct Batch {
    events: Vec<AuditEvent>,
    waiters: Vec<Waiter>,
    flushes: Vec<oneshot::Sender<()>>,
}

impl Batch {
    fn add(&mut self, message: Message, denials: &mut Denials, stats: &Counters) {
        match message {
            Message::Events { events, done } => {
                let now = Instant::now();
                let mut kept = Vec::with_capacity(events.len());
                let mut folded = 0;
                for event in events {
                    folded += u64::from(denials.take(event, now, &mut kept));
                }
                stats.folded.fetch_add(folded, Ordering::Relaxed);
                if let Some(done) = done {
                    if kept.is_empty() {
                        // Folded into a refusal aggregate: nothing to wait for.
                        let _ = done.send(Ok(()));
                    } else {
                        let mut chains: Vec<_> = kept.iter().map(|e| e.tenant_id).collect();
                        chains.dedup();
                        self.waiters.push(Waiter { chains, done });
                    }
                }
                self.events.extend(kept);
            }
            Message::Flush(done) => self.flushes.push(done),
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
    /// Events of chains whose last append failed, oldest first: written before new ones.
    held: Vec<AuditEvent>,
    denials: Denials,
    arrivals: Arrivals,
}

/// The recent arrival rate of events, from which a commit's window is sized.
#[derive(Debug, Default)]
struct Arrivals {
    /// When the previous batch started to be gathered.
    since: Option<Instant>,
    /// Events per second, smoothed over recent batches.
    rate: f64,
    /// Batches still to commit without a window, after a window that gained nothing.
    skip: u32,
    /// How many to skip after the next window that gains nothing.
    backoff: u32,
}

impl Arrivals {
    /// Folds in that `events` arrived since the previous batch, as the batch starting `now`
    /// is gathered.
    fn observe(&mut self, events: usize, now: Instant) {
        if let Some(since) = self.since {
            let secs = now.duration_since(since).as_secs_f64().max(1e-6);
            let rate = events as f64 / secs;
            self.rate = if self.rate == 0.0 {
                rate
            } else {
                0.7 * self.rate + 0.3 * rate
            };
        }
        self.since = Some(now);
    }

    /// How long to hold a commit that has `have` events for the rest of [`TARGET_BATCH`]: the
    /// time the recent rate needs to bring them, at most [`MAX_WINDOW`]; `None` when the
    /// batch is full enough, or when not even one more event is expected within the longest
    /// window (light load: nothing to gain by waiting).
    fn window(&mut self, have: usize) -> Option<Duration> {
        let missing = TARGET_BATCH.checked_sub(have).filter(|m| *m > 0)?;
        if self.rate * MAX_WINDOW.as_secs_f64() < 1.0 {
            return None;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return None;
        }
        let secs = (missing as f64 / self.rate).min(MAX_WINDOW.as_secs_f64());
        Some(Duration::from_secs_f64(secs))
    }

    /// How long the next event may take before the window closes early: twice the recent
    /// gap between events.
    fn overdue(&self) -> Duration {
        Duration::from_secs_f64((2.0 / self.rate).min(MAX_WINDOW.as_secs_f64()))
    }

    /// A window ended having gained `gained` events: none makes the next ones skip.
    fn held(&mut self, gained: usize) {
        if gained == 0 {
            self.backoff = (self.backoff * 2).clamp(1, MAX_SKIP);
            self.skip = self.backoff;
        } else {
            self.backoff = 0;
        }
    }
}

impl std::fmt::Debug for AuditWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditWriter")
            .field("stream", &self.stream.is_some())
            .field("held", &self.held.len())
            .finish_non_exhaustive()
    }
}

/// What the writer waits for next.
enum Wake {
    Message(Message),
    Closed,
    Timer,
}

impl AuditWriter {
    /// Commits batches until every recorder is gone and nothing is left to write.
    pub async fn run(mut self) {
        let mut open = true;
        let mut retry = RETRY_FIRST;
        let mut attempts_after_close = 0;
        loop {
            let wake = self.next(open, retry).await;
            let mut batch = Batch::default();
            match wake {
                Wake::Message(message) => batch.add(message, &mut self.denials, &self.stats),
                Wake::Closed => open = false,
                Wake::Timer => {}
            }
            while open && batch.events.len() < MAX_BATCH {
                match self.rx.try_recv() {
                    Ok(message) => batch.add(message, &mut self.denials, &self.stats),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => open = false,
                }
            }
            if open && batch.flushes.is_empty() && batch.waiters.is_empty() {
                open = self.fill(&mut batch).await;
            }
            let closing = !open || !batch.flushes.is_empty();
            batch
                .events
                .extend(self.denials.close(Instant::now(), closing));
            self.commit(batch.events, batch.waiters).await;
            retry = if self.held.is_empty() {
                RETRY_FIRST
            } else {
                (retry * 2).min(RETRY_MAX)
            };
            for done in batch.flushes {
                let _ = done.send(());
            }
            if !open {
                attempts_after_close += 1;
                if self.held.is_empty() || attempts_after_close > RETRIES_AT_SHUTDOWN {
                    if !self.held.is_empty() {
                        tracing::error!(
                            events = self.held.len(),
                            "the audit writer stops with events it could not write"
                        );
                    }
                    return;
                }
            }
        }
    }

    /// Holds `batch` open for more events while the arrival rate says they are coming
    /// ([`Arrivals::window`]); `false` once every recorder is gone.
    async fn fill(&mut self, batch: &mut Batch) -> bool {
        let started = Instant::now();
        self.arrivals.observe(batch.events.len(), started);
        let Some(window) = self.arrivals.window(batch.events.len()) else {
            return true;
        };
        let until = started + window;
        let before = batch.events.len();
        let mut open = true;
        while batch.events.len() < TARGET_BATCH
            && batch.flushes.is_empty()
            && batch.waiters.is_empty()
        {
            let next = until.min(Instant::now() + self.arrivals.overdue());
            match tokio::time::timeout_at(next, self.rx.recv()).await {
                Ok(Some(message)) => batch.add(message, &mut self.denials, &self.stats),
                Ok(None) => {
                    open = false;
                    break;
                }
                Err(_) => break,
            }
        }
        self.arrivals.held(batch.events.len() - before);
        self.stats.windows.fetch_add(1, Ordering::Relaxed);
        self.stats
            .window_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        open
    }

    /// The next message, or the moment to retry held events or to close a refusal window.
    async fn next(&mut self, open: bool, retry: Duration) -> Wake {
        let retry_at = (!self.held.is_empty()).then(|| Instant::now() + retry);
        let at = match (retry_at, self.denials.next_close()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if !open {
            if let Some(at) = at {
                tokio::time::sleep_until(at).await;
            }
            return Wake::Timer;
        }
        let received = match at {
            None => self.rx.recv().await,
            Some(at) => match tokio::time::timeout_at(at, self.rx.recv()).await {
                Ok(received) => received,
                Err(_) => return Wake::Timer,
            },
        };
        received.map_or(Wake::Closed, Wake::Message)
    }

    /// Writes the held events and `events`; acknowledges each waiter once every chain its
    /// events go to is written, or with the failure of the first that is not. The events of
    /// chains that failed are held for the next attempt.
    async fn commit(&mut self, events: Vec<AuditEvent>, waiters: Vec<Waiter>) {
        let mut all = std::mem::take(&mut self.held);
        all.extend(events);
        if all.is_empty() {
            for w in waiters {
                let _ = w.done.send(Ok(()));
            }
            return;
        }
        let started = Instant::now();
        let outcomes = match self.store.append_audit_events(&all).await {
            Ok(outcomes) => outcomes,
            Err(e) => {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %e, events = all.len(), "cannot write audit events; retrying");
                for w in waiters {
                    let _ = w.done.send(Err(e.to_string()));
                }
                self.hold(all);
                return;
            }
        };
        let micros = started.elapsed().as_micros() as u64;
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.stats
            .commit_micros
            .fetch_add(micros, Ordering::Relaxed);
        let mut failed: Vec<(Option<TenantId>, String)> = Vec::new();
        let mut written = Vec::new();
        for ChainAppend { tenant_id, result } in outcomes {
            match result {
                Ok(chained) => written.extend(chained),
                Err(e) => {
                    self.failed_chain(tenant_id, &e);
                    failed.push((tenant_id, e.to_string()));
                }
            }
        }
        self.stats
            .events
            .fetch_add(written.len() as u64, Ordering::Relaxed);
        tracing::debug!(
            events = written.len(),
            waiters = waiters.len(),
            micros,
            "audit batch committed"
        );
        for w in waiters {
            let outcome = w
                .chains
                .iter()
                .find_map(|c| failed.iter().find(|(f, _)| f == c))
                .map_or(Ok(()), |(_, e)| Err(e.clone()));
            let _ = w.done.send(outcome);
        }
        self.stream(&written);
        let failed: HashSet<Option<TenantId>> = failed.into_iter().map(|(c, _)| c).collect();
        self.hold(
            all.into_iter()
                .filter(|e| failed.contains(&e.tenant_id))
                .collect(),
        );
    }

    fn failed_chain(&self, tenant: Option<TenantId>, e: &StoreError) {
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        let chain = tenant.map_or_else(|| "deployment".to_string(), |t| t.to_string());
        if let StoreError::Conflict(_) = e {
            self.stats.conflicts.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                chain,
                error = %e,
                "AUDIT CHAIN CONFLICT: a record already holds this chain's next position (planted, or left by a failed write). Its events are held and retried and its requests in sync mode answer 503; other chains are unaffected. Run `api audit verify` and remove the record it names."
            );
        } else {
            tracing::error!(chain, error = %e, "cannot write this audit chain's events; retrying");
        }
    }

    /// Keeps `events` for the next attempt, dropping the oldest beyond [`MAX_HELD`].
    fn hold(&mut self, mut events: Vec<AuditEvent>) {
        if events.len() > MAX_HELD {
            let dropped = events.len() - MAX_HELD;
            events.drain(..dropped);
            self.stats
                .dropped
                .fetch_add(dropped as u64, Ordering::Relaxed);
            tracing::error!(
                dropped,
                "too many audit events held for chains that cannot be written: the oldest were dropped"
            );
        }
        self.stats
            .held
            .store(events.len() as u64, Ordering::Relaxed);
        self.held = events;
    }

    fn stream(&mut self, chained: &[ChainedEvent]) {
        let Some(out) = self.stream.as_mut() else {
            return;
        };
        if chained.is_empty() {
            return;
        }
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
    use std::{
        collections::{BTreeMap, HashSet},
        sync::{
            atomic::{AtomicUsize, Ordering},
            Mutex,
        },
    };

    use async_trait::async_trait;
    use time::OffsetDateTime;

    use super::*;
    use crate::audit::{
        self, seal, Actor, AuditAction, AuditBlock, BlockSpan, ChainHead, ChainedEvent,
    };

    /// A store that keeps chains in memory, counts transactions, fails the first `failures`
    /// appends, and refuses to extend the chains in `planted` (as a record at their next
    /// position would).
    #[derive(Default)]
    struct Memory {
        heads: Mutex<BTreeMap<Option<TenantId>, ChainHead>>,
        blocks: Mutex<Vec<AuditBlock>>,
        appends: AtomicUsize,
        failures: AtomicUsize,
        planted: Mutex<HashSet<Option<TenantId>>>,
        /// Appends take no time (the default is 5 ms, so that submissions pile up).
        quick: std::sync::atomic::AtomicBool,
    }

    impl Memory {
        fn events(&self, chain: Option<TenantId>) -> Vec<ChainedEvent> {
            self.blocks
                .lock()
                .expect("blocks")
                .iter()
                .filter(|b| b.tenant_id == chain)
                .flat_map(|b| b.events().expect("decode"))
                .collect()
        }
    }

    #[async_trait]
    impl AuditStore for Memory {
        async fn append_audit_events(
            &self,
            events: &[AuditEvent],
        ) -> Result<Vec<ChainAppend>, StoreError> {
            if self
                .failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return Err(StoreError::Unavailable("down".into()));
            }
            self.appends.fetch_add(1, Ordering::SeqCst);
            // Let submissions pile up behind a slow transaction.
            if !self.quick.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let mut by_chain: BTreeMap<Option<TenantId>, Vec<AuditEvent>> = BTreeMap::new();
            for e in events {
                by_chain.entry(e.tenant_id).or_default().push(e.clone());
            }
            let planted = self.planted.lock().expect("planted").clone();
            let mut heads = self.heads.lock().expect("heads");
            Ok(by_chain
                .into_iter()
                .map(|(chain, events)| {
                    let result = if planted.contains(&chain) {
                        Err(StoreError::Conflict("duplicate key".into()))
                    } else {
                        let head = heads
                            .entry(chain)
                            .or_insert_with(|| ChainHead::empty(chain));
                        let (block, chained) = seal(head, &events);
                        self.blocks.lock().expect("blocks").push(block);
                        Ok(chained)
                    };
                    ChainAppend {
                        tenant_id: chain,
                        result,
                    }
                })
                .collect())
        }
        async fn audit_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
            Ok(self
                .heads
                .lock()
                .expect("heads")
                .values()
                .cloned()
                .collect())
        }
        async fn audit_chain_head(
            &self,
            chain: Option<TenantId>,
        ) -> Result<Option<ChainHead>, StoreError> {
            Ok(self.heads.lock().expect("heads").get(&chain).cloned())
        }
        async fn audit_blocks(
            &self,
            chain: Option<TenantId>,
            after: i64,
            limit: u32,
        ) -> Result<Vec<AuditBlock>, StoreError> {
            let mut blocks: Vec<AuditBlock> = self
                .blocks
                .lock()
                .expect("blocks")
                .iter()
                .filter(|b| b.tenant_id == chain && b.first_seq > after)
                .cloned()
                .collect();
            blocks.sort_by_key(|b| b.first_seq);
            blocks.truncate(limit as usize);
            Ok(blocks)
        }
        async fn audit_blocks_desc(
            &self,
            _: Option<TenantId>,
            _: &BlockSpan,
            _: u32,
        ) -> Result<Vec<AuditBlock>, StoreError> {
            unimplemented!("not used by the writer")
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
        assert_eq!(store.events(Some(tenant)).len(), 200);
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
        log.record(vec![event(tenant)]).await.expect("committed");
        assert_eq!(store.events(Some(tenant)).len(), 2);
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
        assert!(store.events(Some(tenant)).is_empty());
        tokio::spawn(writer.run());
        log.flush().await;
        assert_eq!(store.events(Some(tenant)).len(), 2);
        // Off records nothing and never fails.
        AuditLog::off()
            .record(vec![event(tenant)])
            .await
            .expect("off");
        assert!(AuditLog::off().stats().is_none());
    }

    /// Attack finding 2: a chain that cannot be extended fails alone. Its requests are told
    /// (503), its events are held, counted and written once the chain is repaired; the other
    /// tenants' events commit meanwhile.
    #[tokio::test]
    async fn a_chain_that_cannot_be_extended_fails_alone_and_loses_nothing() {
        let store = Arc::new(Memory::default());
        let (log, writer) = AuditLog::new(store.clone(), Durability::Sync, None);
        tokio::spawn(writer.run());
        let (victim, other) = (TenantId::new(), TenantId::new());
        store.planted.lock().expect("planted").insert(Some(victim));
        let (a, b) = tokio::join!(
            log.record(vec![event(victim)]),
            log.record(vec![event(other)])
        );
        assert!(matches!(a, Err(AuditError::Unavailable(_))), "{a:?}");
        b.expect("the other tenant's event commits");
        for _ in 0..20 {
            log.record(vec![event(other)]).await.expect("other");
        }
        assert_eq!(store.events(Some(other)).len(), 21);
        assert!(store.events(Some(victim)).is_empty());
        let stats = log.stats().expect("on");
        assert!(stats.chain_conflicts >= 1, "{stats:?}");
        assert_eq!(stats.events_held, 1);
        // Repaired: the held event is written, before the next one.
        store.planted.lock().expect("planted").clear();
        log.record(vec![event(victim)]).await.expect("repaired");
        let written = store.events(Some(victim));
        assert_eq!(written.len(), 2, "nothing acknowledged or held was lost");
        assert_eq!(log.stats().expect("on").events_held, 0);
    }

    /// Attack finding 17: a flood of identical refusals costs one event now and one
    /// aggregate when its window closes.
    #[tokio::test(start_paused = true)]
    async fn a_flood_of_refusals_is_folded() {
        let store = Arc::new(Memory::default());
        let (log, writer) = AuditLog::new(store.clone(), Durability::Sync, None);
        tokio::spawn(writer.run());
        let refusal = || {
            AuditEvent::denied(
                None,
                AuditAction::TokenRead,
                Actor::Anonymous,
                vec![],
                "the API key is unknown or has been revoked",
            )
        };
        for _ in 0..500 {
            log.record(vec![refusal()])
                .await
                .expect("recorded or folded");
        }
        assert_eq!(store.events(None).len(), 1, "the first at once");
        tokio::time::sleep(crate::audit::denials::WINDOW + Duration::from_secs(1)).await;
        log.flush().await;
        let events = store.events(None);
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].event.count, Some(499));
        assert_eq!(log.stats().expect("on").denials_folded, 499);
    }

    fn quick_store() -> Arc<Memory> {
        let store = Arc::new(Memory::default());
        store.quick.store(true, Ordering::SeqCst);
        store
    }

    /// Under a steady stream of events a commit is held open until it carries many of them,
    /// instead of one commit per wake-up (virtual time: the figures are exact, not timed).
    #[tokio::test(start_paused = true)]
    async fn under_load_a_commit_is_held_open_until_it_fills() {
        let store = quick_store();
        let (log, writer) = AuditLog::new(store.clone(), Durability::Async, None);
        tokio::spawn(writer.run());
        let tenant = TenantId::new();
        // 10 events a millisecond (the timer's resolution), each submitted on its own.
        for _ in 0..400 {
            for _ in 0..10 {
                log.record(vec![event(tenant)]).await.expect("queued");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        log.flush().await;
        let stats = log.stats().expect("on");
        assert_eq!(stats.events_committed, 4000);
        let per_commit = stats.events_committed / stats.batches_committed;
        assert!(
            per_commit >= 16,
            "{per_commit} events per commit: {stats:?}"
        );
        assert!(
            stats.windows_held > 0 && stats.window_micros > 0,
            "{stats:?}"
        );
        let report = audit::verify(store.as_ref(), Some(tenant))
            .await
            .expect("verify");
        assert!(report.ok() && report.events_checked == 4000, "{report:?}");
    }

    /// A caller waiting on a commit is never held in a window: a lone sync caller commits
    /// at once, every time.
    #[tokio::test(start_paused = true)]
    async fn a_waiting_callers_commit_is_never_held() {
        let store = quick_store();
        let (log, writer) = AuditLog::new(store.clone(), Durability::Sync, None);
        tokio::spawn(writer.run());
        let tenant = TenantId::new();
        for _ in 0..200 {
            log.record(vec![event(tenant)]).await.expect("committed");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let stats = log.stats().expect("on");
        assert_eq!(stats.batches_committed, 200, "one commit a request");
        assert_eq!(
            (stats.windows_held, stats.window_micros),
            (0, 0),
            "{stats:?}"
        );
    }

    /// Async events that trickle in too slowly to gain from a window: after one that gained
    /// nothing, windows are skipped, for longer each time.
    #[tokio::test(start_paused = true)]
    async fn a_window_that_gains_nothing_is_not_held_again_soon() {
        let store = quick_store();
        let (log, writer) = AuditLog::new(store.clone(), Durability::Async, None);
        tokio::spawn(writer.run());
        let tenant = TenantId::new();
        // One event every 1.5 ms: the rate promises one within the 2 ms window, the gap
        // check closes each window empty-handed.
        for _ in 0..200 {
            log.record(vec![event(tenant)]).await.expect("queued");
            tokio::time::sleep(Duration::from_micros(1500)).await;
        }
        log.flush().await;
        let stats = log.stats().expect("on");
        assert_eq!(stats.events_committed, 200);
        assert!((1..=12).contains(&stats.windows_held), "{stats:?}");
    }
}
