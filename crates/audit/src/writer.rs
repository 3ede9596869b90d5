//! The writer: one task per process that takes what the lanes hold and commits it in one
//! transaction, one block per chain ([`crate::store::AuditAppender`]), then answers the lanes'
//! waiters and writes the committed events to the optional stream.
//!
//! Under load it holds a commit open for more events while nobody waits for it
//! ([`crate::window`]). In `sync` mode a request submits its event before it forwards and
//! waits only after, so a commit gathers the events of every request in flight until the
//! first of them needs its answer.
//!
//! A chain that cannot be extended (a record already at its next position: planted, or left
//! by a failure) fails alone: its waiting requests are answered 503, its events are held and
//! retried, a metric and a loud log line say so — and the other chains of the batch commit.
//! Floods of identical refusals are folded ([`crate::denials`]).

use std::{
    collections::{BTreeMap, HashMap},
    io::Write,
    sync::{atomic::Ordering, Arc},
    time::Duration,
};

use tokio::time::Instant;

use crate::{
    denials::Denials,
    encoded::{EncodedEvent, EncodedEvents},
    lanes::{Shared, Taken},
    store::{AuditAppender, AuditStore, ChainEvents},
    window::{Arrivals, TARGET_BATCH},
};
use tessera_domain::{error::StoreError, ids::TenantId};

/// Most events held for chains that could not be written; beyond, the oldest are dropped
/// (counted, and logged as errors).
const MAX_HELD: usize = 100_000;
/// First and longest pause before retrying held events.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);
/// Attempts made at held events once every recorder is gone (shutdown), before giving up.
const RETRIES_AT_SHUTDOWN: u32 = 5;

/// The task that commits events. It ends when every [`tessera_domain::audit::AuditLog`] clone is dropped,
/// after committing what was queued. Start it with [`AuditWriter::spawn`]: its appender may
/// block its thread (a SQLite commit runs on it, waiting for the database's write lock), which
/// must never be a thread that serves, nor one whose other tasks hold that lock.
pub struct AuditWriter {
    shared: Arc<Shared>,
    store: Arc<dyn AuditStore>,
    /// Made on first use, and again after a transaction failed as a whole.
    appender: Option<Box<dyn AuditAppender>>,
    stream: Option<Box<dyn Write + Send>>,
    /// Events of chains whose last append failed, oldest first: written before new ones.
    held: EncodedEvents,
    denials: Denials,
    arrivals: Arrivals,
    /// Emptied buffers, handed back to the lanes.
    spares: Vec<EncodedEvents>,
}

impl std::fmt::Debug for AuditWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditWriter")
            .field("stream", &self.stream.is_some())
            .field("held", &self.held.len())
            .finish_non_exhaustive()
    }
}

/// What one turn of the writer commits.
#[derive(Default)]
struct Batch {
    taken: Vec<Taken>,
    /// The aggregates of the refusal windows that closed, encoded here.
    own: EncodedEvents,
}

impl Batch {
    /// Events taken from the lanes.
    fn len(&self) -> usize {
        self.taken.iter().map(|t| t.events.len()).sum()
    }

    /// Events to write: those taken and not folded, and the aggregates.
    fn live(&self) -> impl Iterator<Item = EncodedEvent<'_>> + '_ {
        self.taken
            .iter()
            .flat_map(|t| t.live().map(|(e, _)| e))
            .chain(self.own.iter())
    }
}

/// Says the writer stopped, when it does: waiters stop waiting.
struct Stopped(Arc<Shared>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        self.0.wake_all();
    }
}

impl AuditWriter {
    pub(super) fn new(
        shared: Arc<Shared>,
        store: Arc<dyn AuditStore>,
        stream: Option<Box<dyn Write + Send>>,
    ) -> Self {
        Self {
            shared,
            store,
            appender: None,
            stream,
            held: EncodedEvents::default(),
            denials: Denials::default(),
            arrivals: Arrivals::default(),
            spares: Vec::new(),
        }
    }

    /// Runs the writer on a thread of its own, with a runtime that runs nothing else: its
    /// commits never hold up a runtime that serves, and a request's wake-up reaches a thread
    /// that waits for nothing else.
    ///
    /// # Errors
    /// When the thread or its runtime cannot be made.
    pub fn spawn(self) -> std::io::Result<std::thread::JoinHandle<()>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || runtime.block_on(self.run()))
    }

    /// Commits batches until every recorder is gone and nothing is left to write (on the
    /// current task: see [`AuditWriter::spawn`]).
    pub async fn run(mut self) {
        let _stopped = Stopped(self.shared.clone());
        let mut retry = RETRY_FIRST;
        let mut attempts_after_close = 0;
        loop {
            self.wait(retry).await;
            let closed = self.shared.closed.load(Ordering::SeqCst);
            let flushes = self.shared.flushes.load(Ordering::SeqCst);
            let flushing = flushes > self.shared.flushed.load(Ordering::SeqCst);
            let mut batch = Batch {
                taken: self.shared.take_all(&mut self.spares),
                ..Batch::default()
            };
            if !closed && !flushing && batch.len() > 0 {
                self.fill(&mut batch).await;
            }
            self.fold(&mut batch, closed || flushing);
            if batch.live().next().is_some() || !self.held.is_empty() {
                self.commit(batch).await;
            } else {
                // Only folded refusals: nothing to write, their waiters are answered.
                self.answer(batch, &HashMap::new());
            }
            retry = if self.held.is_empty() {
                RETRY_FIRST
            } else {
                (retry * 2).min(RETRY_MAX)
            };
            if flushing {
                self.shared.flushed.fetch_max(flushes, Ordering::SeqCst);
                self.shared.flush_done.notify_waiters();
            }
            if closed {
                attempts_after_close += 1;
                let drained = self.shared.queued() == 0;
                if drained && (self.held.is_empty() || attempts_after_close > RETRIES_AT_SHUTDOWN) {
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

    /// Waits for events, a flush, the last recorder to go, or the moment to retry held
    /// events or to close a refusal window.
    async fn wait(&mut self, retry: Duration) {
        let s = &self.shared;
        if s.closed.load(Ordering::SeqCst)
            || s.flushes.load(Ordering::SeqCst) > s.flushed.load(Ordering::SeqCst)
            || s.queued() > 0
        {
            return;
        }
        let retry_at = (!self.held.is_empty()).then(|| Instant::now() + retry);
        let at = match (retry_at, self.denials.next_close()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match at {
            None => s.wake.notified().await,
            Some(at) => {
                let _ = tokio::time::timeout_at(at, s.wake.notified()).await;
            }
        }
    }

    /// Holds `batch` open for more events while the arrival rate says they are coming and
    /// nobody waits for its commit ([`Arrivals::window`]): in sync mode the events' requests
    /// are still forwarding, and the first of them to wait closes it. The events stay in their
    /// lanes meanwhile: a lane that already holds some does not wake the writer again, so a
    /// window costs a wake-up per thread, not one per event.
    async fn fill(&mut self, batch: &mut Batch) {
        let started = Instant::now();
        self.arrivals.observe(batch.len(), started);
        if self.shared.someone_waits() {
            return;
        }
        let Some(window) = self.arrivals.window(batch.len()) else {
            return;
        };
        let until = started + window;
        let before = batch.len();
        let s = &self.shared;
        s.holding.store(true, Ordering::SeqCst);
        loop {
            let flushing = s.flushes.load(Ordering::SeqCst) > s.flushed.load(Ordering::SeqCst);
            if s.someone_waits()
                || s.closed.load(Ordering::SeqCst)
                || flushing
                || before + s.queued() as usize >= TARGET_BATCH
                || tokio::time::timeout_at(until, s.wake.notified())
                    .await
                    .is_err()
            {
                break;
            }
        }
        s.holding.store(false, Ordering::SeqCst);
        batch.taken.extend(s.take_all(&mut self.spares));
        self.arrivals.held(batch.len() - before);
        let stats = &self.shared.stats;
        stats.windows.fetch_add(1, Ordering::Relaxed);
        stats
            .window_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
    }

    /// Folds the batch's refusals ([`Denials`]) and adds the aggregates of the refusal
    /// windows that closed (all of them when `closing`).
    fn fold(&mut self, batch: &mut Batch, closing: bool) {
        let now = Instant::now();
        let mut folded = 0;
        for taken in &mut batch.taken {
            for (at, event) in std::mem::take(&mut taken.refusals) {
                let mut kept = Vec::new();
                if self.denials.take(event, now, &mut kept) {
                    folded += 1;
                    taken.folded.resize(taken.events.len(), false);
                    taken.folded[at] = true;
                } else {
                    // The refusal itself comes last, already encoded in its lane; before it,
                    // the aggregate of its kind's window if that had closed unnoticed.
                    kept.pop();
                }
                for aggregate in kept {
                    batch.own.push(&aggregate);
                }
            }
        }
        self.shared
            .stats
            .folded
            .fetch_add(folded, Ordering::Relaxed);
        for event in self.denials.close(now, closing) {
            batch.own.push(&event);
        }
    }

    /// Writes the held events and the batch; answers each lane's waiters (with the failure
    /// of their chain, where it could not be written). The events of chains that failed are
    /// held for the next attempt.
    async fn commit(&mut self, batch: Batch) {
        let held = std::mem::take(&mut self.held);
        let chains = by_chain(&held, &batch);
        let started = Instant::now();
        let outcome = match self.appender().await {
            Ok(appender) => appender.append(&chains).await,
            Err(e) => Err(e),
        };
        let failed: HashMap<Option<TenantId>, String> = match outcome {
            Ok(outcomes) => {
                let micros = started.elapsed().as_micros() as u64;
                let stats = &self.shared.stats;
                stats.batches.fetch_add(1, Ordering::Relaxed);
                stats.commit_micros.fetch_add(micros, Ordering::Relaxed);
                self.written(outcomes)
            }
            Err(e) => {
                self.shared.stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %e, events = batch.len() + held.len(), "cannot write audit events; retrying");
                // A fresh connection (and fresh heads) next time.
                self.appender = None;
                chains.iter().map(|c| (c.chain, e.to_string())).collect()
            }
        };
        drop(chains);
        self.hold_failed(&held, &batch, &failed);
        self.answer(batch, &failed);
    }

    async fn appender(&mut self) -> Result<&mut Box<dyn AuditAppender>, StoreError> {
        if self.appender.is_none() {
            self.appender = Some(self.store.audit_appender().await?);
        }
        self.appender
            .as_mut()
            .ok_or_else(|| StoreError::Unavailable("no audit appender".into()))
    }
}

/// The events to write, by chain (in chain order: the order heads are locked in), each
/// chain's in order: held ones first, then the lanes', then the writer's own.
fn by_chain<'a>(held: &'a EncodedEvents, batch: &'a Batch) -> Vec<ChainEvents<'a>> {
    let mut chains: BTreeMap<Option<TenantId>, Vec<EncodedEvent<'a>>> = BTreeMap::new();
    for e in held.iter().chain(batch.live()) {
        chains.entry(e.chain).or_default().push(e);
    }
    chains
        .into_iter()
        .map(|(chain, events)| ChainEvents { chain, events })
        .collect()
}

#[path = "writer_outcome.rs"]
mod outcome;
