//! Lanes: how events travel from the threads that make them to the writer.
//!
//! Each thread that records events has a lane of its own per [`tessera_domain::audit::AuditLog`]: a queue that
//! only it and the writer touch, so its lock is never contended but for the instant the writer
//! swaps the queue out. Recording an event encodes it into the lane ([`crate::encoded::EncodedEvents`]);
//! nothing is allocated per request, and no message is sent: only a lane that was empty wakes
//! the writer, so a busy thread wakes it once per commit, not once per event.
//!
//! A request that must wait for its events' commit ([`tessera_domain::audit::Durability::Sync`]) takes a
//! *ticket*, numbered in its lane. After each commit the writer raises the lane's answered
//! ticket and wakes the lane's waiters once; a waiter whose events went to a chain that could
//! not be written finds its ticket among the lane's failures. A waiter that starts to wait
//! says so ([`Lane::blocked`]): the writer holds a commit open for more events only while
//! nobody waits for it (docs/architecture.md, "Audit trail").

use std::{
    cell::RefCell,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex, Weak,
    },
    time::Duration,
};

use tokio::sync::Notify;

use crate::encoded::{EncodedEvent, EncodedEvents};
use tessera_domain::audit::{AuditEvent, Outcome};

/// Events a lane may hold before its recorders wait for the writer (backpressure when the
/// database is slow).
pub const LANE_LIMIT: usize = 16 * 1024;

/// What the recorders and the writer of one log share.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// Every lane, in the order the threads first recorded.
    lanes: Mutex<Vec<Arc<Lane>>>,
    /// Wakes the writer: a lane that was empty got an event, a waiter started to wait during
    /// a window, a flush was asked for, or the last recorder went away.
    pub(super) wake: Notify,
    /// The writer holds a commit open for more events.
    pub(super) holding: AtomicBool,
    /// Every recorder is gone.
    pub(super) closed: AtomicBool,
    /// The writer has stopped: waiters give up.
    pub(super) stopped: AtomicBool,
    /// Flushes asked for, and answered (the writer sets `flushed` to the `flushes` it read
    /// before the commit that included everything recorded until then).
    pub(super) flushes: AtomicU64,
    pub(super) flushed: AtomicU64,
    pub(super) flush_done: Notify,
    /// The writer's running totals.
    pub(super) stats: Counters,
}

/// One thread's queue to the writer.
#[derive(Debug, Default)]
pub(super) struct Lane {
    pub(super) queue: Mutex<Queue>,
    /// Every ticket up to this one is answered.
    pub(super) answered: AtomicU64,
    /// The highest ticket a waiter is blocked on (compared with `answered`: a waiter whose
    /// ticket is answered but who has not run yet no longer counts).
    pub(super) blocked: AtomicU64,
    /// Wakes this lane's waiters after each commit.
    pub(super) done: Notify,
}

/// What a lane holds until the writer takes it.
#[derive(Debug, Default)]
pub(super) struct Queue {
    /// Encoded events, in order.
    pub(super) events: EncodedEvents,
    /// Each event's ticket (0: nobody waits for it).
    pub(super) tickets: Vec<u64>,
    /// The refusals among them (by index), which the writer may fold into aggregates.
    pub(super) refusals: Vec<(usize, AuditEvent)>,
    /// The last ticket handed out.
    pub(super) last_ticket: u64,
    /// Tickets whose events could not be written, with why (taken by their waiters).
    pub(super) failed: Vec<(u64, String)>,
    /// The highest ticket whose failure was dropped because too many were kept: a waiter at or
    /// below it that finds no failure of its own cannot tell, and is answered as failed.
    pub(super) forgotten: u64,
}

impl Queue {
    pub(super) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    fn len(&self) -> usize {
        self.events.len()
    }
}

impl Taken {
    /// The events to write (those not folded), with their tickets.
    pub(super) fn live(&self) -> impl Iterator<Item = (EncodedEvent<'_>, u64)> + '_ {
        self.events
            .iter()
            .zip(&self.tickets)
            .enumerate()
            .filter(|(i, _)| !self.folded.get(*i).copied().unwrap_or(false))
            .map(|(_, (e, t))| (e, *t))
    }
}

/// A lane's queue as the writer took it.
#[derive(Debug)]
pub(super) struct Taken {
    pub(super) lane: Arc<Lane>,
    pub(super) events: EncodedEvents,
    pub(super) tickets: Vec<u64>,
    pub(super) refusals: Vec<(usize, AuditEvent)>,
    /// The events folded into refusal aggregates (by index; empty: none), not to be written.
    pub(super) folded: Vec<bool>,
    /// Every ticket up to this one was handed out before the queue was taken: answering the
    /// taken events answers them all.
    pub(super) last_ticket: u64,
}

thread_local! {
    /// This thread's lanes, by the log they belong to.
    static LANES: RefCell<Vec<(Weak<Shared>, Arc<Lane>)>> = const { RefCell::new(Vec::new()) };
}

impl Shared {
    /// This thread's lane of this log, made on first use.
    fn lane(self: &Arc<Self>) -> Arc<Lane> {
        LANES.with(|lanes| {
            let mut lanes = lanes.borrow_mut();
            if let Some((_, lane)) = lanes
                .iter()
                .find(|(s, _)| std::ptr::eq(s.as_ptr(), Arc::as_ptr(self)))
            {
                return lane.clone();
            }
            // Logs that are gone (tests make many) leave their lanes behind.
            lanes.retain(|(s, _)| s.strong_count() > 0);
            let lane = Arc::new(Lane::default());
            if let Ok(mut all) = self.lanes.lock() {
                all.push(lane.clone());
            }
            lanes.push((Arc::downgrade(self), lane.clone()));
            lane
        })
    }

    /// Queues `events` in this thread's lane; with `wait`, under a ticket to wait on. Waits
    /// first while the lane is full.
    pub(super) async fn submit(
        self: &Arc<Self>,
        events: Vec<AuditEvent>,
        wait: bool,
    ) -> Option<(Arc<Lane>, u64)> {
        let lane = self.lane();
        let mut events = Some(events);
        let (ticket, wake) = loop {
            // The guard lives in this block only: it never crosses an await.
            let queued = {
                let Ok(mut queue) = lane.queue.lock() else {
                    return None;
                };
                if queue.len() >= LANE_LIMIT && !self.stopped.load(Ordering::SeqCst) {
                    None
                } else {
                    let wake = queue.is_empty();
                    let ticket = if wait {
                        queue.last_ticket += 1;
                        queue.last_ticket
                    } else {
                        0
                    };
                    for event in events.take().unwrap_or_default() {
                        queue.events.push(&event);
                        queue.tickets.push(ticket);
                        if event.outcome == Outcome::Denied {
                            let at = queue.events.len() - 1;
                            queue.refusals.push((at, event));
                        }
                    }
                    Some((ticket, wake))
                }
            };
            match queued {
                Some(done) => break done,
                None => lane.room(self).await,
            }
        };
        if wake {
            self.wake.notify_one();
        }
        wait.then_some((lane, ticket))
    }

    /// Takes every lane's queue (leaving `spares`' empty buffers in their place).
    pub(super) fn take_all(&self, spares: &mut Vec<EncodedEvents>) -> Vec<Taken> {
        let lanes = self.lanes.lock().map(|l| l.clone()).unwrap_or_default();
        let mut taken = Vec::new();
        for lane in lanes {
            let Ok(mut queue) = lane.queue.lock() else {
                continue;
            };
            if queue.is_empty() {
                continue;
            }
            let events = std::mem::replace(&mut queue.events, spares.pop().unwrap_or_default());
            let tickets = std::mem::take(&mut queue.tickets);
            let refusals = std::mem::take(&mut queue.refusals);
            let last_ticket = queue.last_ticket;
            drop(queue);
            taken.push(Taken {
                lane,
                events,
                tickets,
                refusals,
                folded: Vec::new(),
                last_ticket,
            });
        }
        taken
    }

    /// Events queued in every lane now (for metrics).
    pub(super) fn queued(&self) -> u64 {
        let lanes = self.lanes.lock().map(|l| l.clone()).unwrap_or_default();
        lanes
            .iter()
            .filter_map(|l| l.queue.lock().ok().map(|q| q.len() as u64))
            .sum()
    }

    /// Whether a waiter is blocked on events not yet committed.
    pub(super) fn someone_waits(&self) -> bool {
        let Ok(lanes) = self.lanes.lock() else {
            return false;
        };
        lanes
            .iter()
            .any(|l| l.blocked.load(Ordering::SeqCst) > l.answered.load(Ordering::SeqCst))
    }

    /// Every lane's waiters, after the writer stopped.
    pub(super) fn wake_all(&self) {
        let lanes = self.lanes.lock().map(|l| l.clone()).unwrap_or_default();
        for lane in lanes {
            lane.done.notify_waiters();
        }
        self.flush_done.notify_waiters();
    }
}

impl Lane {
    /// Waits while the lane holds [`LANE_LIMIT`] events (the writer is behind).
    async fn room(&self, shared: &Shared) {
        loop {
            let notified = self.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let full = self
                .queue
                .lock()
                .map(|q| q.len() >= LANE_LIMIT)
                .unwrap_or(false);
            if !full || shared.stopped.load(Ordering::SeqCst) {
                return;
            }
            shared.wake.notify_one();
            notified.await;
        }
    }

    /// Answers every ticket up to `last`: the ones in `failed` with their failure.
    pub(super) fn answer(&self, last: u64, failed: Vec<(u64, String)>) {
        if !failed.is_empty() {
            if let Ok(mut queue) = self.queue.lock() {
                queue.failed.extend(failed);
                // Waiters that gave up never take theirs: keep the newest only.
                let excess = queue.failed.len().saturating_sub(LANE_LIMIT);
                let dropped = queue.failed.drain(..excess).map(|(t, _)| t).max();
                if let Some(t) = dropped {
                    queue.forgotten = queue.forgotten.max(t);
                }
            }
        }
        self.answered.fetch_max(last, Ordering::SeqCst);
        self.done.notify_waiters();
    }

    /// Waits until `ticket` is answered: `Ok` once its events are committed, `Err` with why
    /// they were not, `None` when the writer stopped first or `limit` passed.
    pub(super) async fn wait(
        &self,
        shared: &Shared,
        ticket: u64,
        limit: Duration,
    ) -> Option<Result<(), String>> {
        let waited = tokio::time::timeout(limit, async {
            loop {
                let notified = self.done.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.answered.load(Ordering::SeqCst) >= ticket {
                    return true;
                }
                if shared.stopped.load(Ordering::SeqCst) {
                    return false;
                }
                self.blocked(shared, ticket);
                notified.await;
            }
        })
        .await;
        if waited != Ok(true) {
            return None;
        }
        let mut queue = self.queue.lock().ok()?;
        Some(match queue.failed.iter().position(|(t, _)| *t == ticket) {
            Some(i) => Err(queue.failed.swap_remove(i).1),
            None if ticket <= queue.forgotten => {
                Err("too many commits failed at once to say whether this one did".into())
            }
            None => Ok(()),
        })
    }

    /// A waiter blocks on `ticket`: if the writer holds a commit open, it should not wait
    /// any longer.
    fn blocked(&self, shared: &Shared, ticket: u64) {
        let before = self.blocked.fetch_max(ticket, Ordering::SeqCst);
        if before <= self.answered.load(Ordering::SeqCst) && shared.holding.load(Ordering::SeqCst) {
            shared.wake.notify_one();
        }
    }
}
/// The writer's running totals, shared with every [`tessera_domain::audit::AuditLog`] clone (they live with the lanes both sides share).
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) events: AtomicU64,
    pub(super) batches: AtomicU64,
    pub(super) failures: AtomicU64,
    pub(super) commit_micros: AtomicU64,
    pub(super) conflicts: AtomicU64,
    pub(super) held: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) folded: AtomicU64,
    pub(super) windows: AtomicU64,
    pub(super) window_micros: AtomicU64,
}
