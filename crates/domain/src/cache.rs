//! A small time-bounded cache for lookups that other processes may change.
//!
//! Entries (including negative ones: "no such key") live at most `ttl`; the process that makes
//! a change removes the affected entries at once. So a change made elsewhere is obeyed within
//! `ttl`, and one made here immediately (SUPPLEMENT §8).

use std::{
    collections::HashMap,
    hash::Hash,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Default lifetime of a cached entry: well inside the 2 s bound on cross-process staleness.
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);
/// Entries kept before the cache is cleared wholesale (a bound on memory, not an LRU).
const MAX_ENTRIES: usize = 50_000;

/// Maps `K` to `V` for at most `ttl`.
pub struct TtlCache<K, V> {
    ttl: Duration,
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// An empty cache; a zero `ttl` disables caching.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The cached value, if present and fresh.
    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(key)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    /// Caches `value` under `key`.
    pub fn insert(&self, key: K, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.retain(|_, (at, _)| at.elapsed() < self.ttl);
                if entries.len() >= MAX_ENTRIES {
                    entries.clear();
                }
            }
            entries.insert(key, (Instant::now(), value));
        }
    }

    /// Removes every entry for which `stale` is true.
    pub fn remove_where(&self, stale: impl Fn(&K, &V) -> bool) {
        if let Ok(mut entries) = self.entries.lock() {
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
        cache.insert("a", 1);
        cache.insert("b", 2);
        assert_eq!(cache.get(&"a"), Some(1));
        cache.remove_where(|k, _| *k == "a");
        assert_eq!(cache.get(&"a"), None);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get(&"b"), None, "expired");
        let off = TtlCache::new(Duration::ZERO);
        off.insert("a", 1);
        assert_eq!(off.get(&"a"), None);
    }
}
