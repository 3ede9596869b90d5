//! How long the writer holds a commit open for more events.
//!
//! A commit's fixed cost (a transaction, the chain heads, a flush on PostgreSQL) dwarfs its
//! cost per event, so under load a commit should carry many events. The writer holds one open
//! while nobody waits for it ([`crate::lanes`]) for a short window sized from the recent
//! arrival rate, until about [`TARGET_BATCH`] events are in it, never longer than
//! [`MAX_WINDOW`]. When events arrive too slowly to add even one in the longest window,
//! nothing is held; and a window that gained nothing makes the next batches skip windows, for
//! twice as many each time.

use std::time::Duration;

// tokio's clock: the same as the system's, but pausable in tests.
use tokio::time::Instant;

/// How many events a commit should carry under load before it is sent.
pub(super) const TARGET_BATCH: usize = 128;
/// The longest a commit is held open for more events.
pub(super) const MAX_WINDOW: Duration = Duration::from_millis(2);
/// Most batches committed at once after a window that gained nothing, before the next try.
const MAX_SKIP: u32 = 64;

/// The recent arrival rate of events, from which a commit's window is sized.
#[derive(Debug, Default)]
pub(super) struct Arrivals {
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
    pub(super) fn observe(&mut self, events: usize, now: Instant) {
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
    pub(super) fn window(&mut self, have: usize) -> Option<Duration> {
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

    /// A window ended having gained `gained` events: none makes the next ones skip.
    pub(super) fn held(&mut self, gained: usize) {
        if gained == 0 {
            self.backoff = (self.backoff * 2).clamp(1, MAX_SKIP);
            self.skip = self.backoff;
        } else {
            self.backoff = 0;
        }
    }
}
