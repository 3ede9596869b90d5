//! Quarantine of proxies whose transform ran past its time limit: such a
//! call costs a core for the whole limit, so the same request must not be replayable in a loop.
//! After a timeout the proxy answers 503 `proxy_error` with `Retry-After` for a back-off that
//! doubles with each further timeout (1 s, 2 s, 4 s, … at most [`MAX_BACKOFF`]); a proxy whose
//! last timeout is older than [`FORGET_AFTER`] starts again from the first step.
//!
//! The state is per process (shared by every serving thread): each gateway process of a
//! scaled-out deployment quarantines on its own. Checking costs one atomic load while nothing is
//! quarantined.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use tessera_domain::ProxyId;

/// The first back-off.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest back-off.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// A proxy with no timeout for this long starts again from [`FIRST_BACKOFF`].
pub(crate) const FORGET_AFTER: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Copy)]
struct Strikes {
    count: u32,
    last: Instant,
    until: Instant,
}

/// The proxies in quarantine, and the timeouts they recently had.
#[derive(Debug, Default)]
pub(crate) struct Quarantine {
    entries: Mutex<HashMap<ProxyId, Strikes>>,
    /// `entries.len()`, readable without the lock.
    len: AtomicUsize,
}

impl Quarantine {
    /// When `proxy` is quarantined: the seconds until it is not (for `Retry-After`, at least 1).
    pub(crate) fn remaining(&self, proxy: ProxyId) -> Option<u64> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let now = Instant::now();
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let left = entries.get(&proxy)?.until.checked_duration_since(now)?;
        Some(left.as_secs() + u64::from(left.subsec_nanos() > 0)).map(|s| s.max(1))
    }

    /// Records a timeout of `proxy`'s transform: quarantines it and returns for how long.
    pub(crate) fn timed_out(&self, proxy: ProxyId) -> Duration {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, s| now.duration_since(s.last) < FORGET_AFTER);
        let count = entries.get(&proxy).map_or(0, |s| s.count).saturating_add(1);
        let backoff = FIRST_BACKOFF
            .checked_mul(1u32 << (count - 1).min(16))
            .map_or(MAX_BACKOFF, |b| b.min(MAX_BACKOFF));
        entries.insert(
            proxy,
            Strikes {
                count,
                last: now,
                until: now + backoff,
            },
        );
        self.len.store(entries.len(), Ordering::Release);
        backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let q = Quarantine::default();
        let p = ProxyId::new();
        let other = ProxyId::new();
        assert_eq!(q.remaining(p), None);
        let steps: Vec<u64> = (0..12).map(|_| q.timed_out(p).as_secs()).collect();
        assert_eq!(steps, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        let left = q.remaining(p).expect("quarantined");
        assert!((299..=300).contains(&left), "{left}");
        assert_eq!(q.remaining(other), None, "only the proxy that timed out");
    }
}
