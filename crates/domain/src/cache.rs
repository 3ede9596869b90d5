//! A small time-bounded cache for lookups that other processes may change.
//!
//! Entries (including negative ones: "no such key") live at most `ttl`, counted from the start
//! of the read that produced them; the process that makes a change removes the affected entries
//! at once. So a change made elsewhere is obeyed within `ttl`, and one made here immediately
//! (SUPPLEMENT §8) — also when a read was in flight during the change: a read that started
//! before an invalidation does not fill the cache (see [`Ticket`]).

use std::{
    collections::HashMap,
    hash::Hash,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

/// Default lifetime of a cached entry: well inside the 2 s bound on cross-process staleness.
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);
/// Entries kept before the cache is cleared wholesale (a bound on memory, not an LRU).
const MAX_ENTRIES: usize = 50_000;

/// Maps `K` to `V` for at most `ttl`.
pub struct TtlCache<K, V> {
    ttl: Duration,
    entries: Mutex<HashMap<K, (Instant, V), foldhash::fast::RandomState>>,
    /// Bumped by every invalidation.
    generation: AtomicU64,
}

impl<K, V> std::fmt::Debug for TtlCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Taken before reading the store for a miss, handed back with the value: it dates the entry
/// from the start of the read, and voids it if an invalidation happened meanwhile (the value
/// may predate the change).
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    generation: u64,
    started: Instant,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// An empty cache; a zero `ttl` disables caching.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::default()),
            generation: AtomicU64::new(0),
        }
    }

    /// Starts a read whose result may be cached with [`TtlCache::insert`].
    pub fn begin(&self) -> Ticket {
        Ticket {
            generation: self.generation.load(Ordering::SeqCst),
            started: Instant::now(),
        }
    }

    /// The cached value, if present and fresh.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entries = self.entries.lock().ok()?;
        entries
            .get(key)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    /// Caches `value`, read since `ticket` was taken, under `key` — unless an invalidation
    /// happened since then.
    pub fn insert(&self, ticket: Ticket, key: K, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            // Checked under the lock that invalidations hold while bumping the generation.
            if self.generation.load(Ordering::SeqCst) != ticket.generation {
                return;
            }
            if entries.len() >= MAX_ENTRIES {
                entries.retain(|_, (at, _)| at.elapsed() < self.ttl);
                if entries.len() >= MAX_ENTRIES {
                    entries.clear();
                }
            }
            entries.insert(key, (ticket.started, value));
        }
    }

    /// Removes every entry for which `stale` is true, and voids reads in flight.
    pub fn remove_where(&self, stale: impl Fn(&K, &V) -> bool) {
        if let Ok(mut entries) = self.entries.lock() {
            self.generation.fetch_add(1, Ordering::SeqCst);
            entries.retain(|k, (_, v)| !stale(k, v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_can_be_removed() {
        let cache = TtlCache::new(Duration::from_millis(50));
        cache.insert(cache.begin(), "a", 1);
        cache.insert(cache.begin(), "b", 2);
        assert_eq!(cache.get(&"a"), Some(1));
        cache.remove_where(|k, _| *k == "a");
        assert_eq!(cache.get(&"a"), None);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get(&"b"), None, "expired");
        let off = TtlCache::new(Duration::ZERO);
        off.insert(off.begin(), "a", 1);
        assert_eq!(off.get(&"a"), None);
    }

    /// A read that was in flight when the entry was invalidated must not put the old value
    /// back (the process that made the change obeys it at once).
    #[test]
    fn a_read_racing_an_invalidation_is_not_cached() {
        let cache = TtlCache::new(Duration::from_secs(60));
        let ticket = cache.begin();
        // … the store is read; meanwhile the row changes and this process invalidates it …
        cache.remove_where(|k, _| *k == "key");
        cache.insert(ticket, "key", "old row");
        assert_eq!(cache.get(&"key"), None);
        cache.insert(cache.begin(), "key", "new row");
        assert_eq!(cache.get(&"key"), Some("new row"));
    }

    /// An entry's age counts from the start of the read, so a slow read does not extend it.
    #[test]
    fn entries_age_from_the_start_of_the_read() {
        let cache = TtlCache::new(Duration::from_millis(30));
        let ticket = cache.begin();
        std::thread::sleep(Duration::from_millis(40));
        cache.insert(ticket, "slow", 1);
        assert_eq!(cache.get(&"slow"), None, "already as old as the ttl");
    }
}
