//! Small caches for lookups that other processes may change: bounded in time and in bytes.
//!
//! Entries (including negative ones: "no such key", see [`LookupCache`]) live at most `ttl`,
//! counted from the start of the read that produced them; the process that makes a change
//! removes the affected entries at once. So a change made elsewhere is obeyed within `ttl`,
//! and one made here immediately — also when a read was in flight during the change: a read
//! that started before an invalidation does not fill the cache (see [`Ticket`]).
//!
//! Each cache holds at most a budget of bytes: every entry is weighed when it is inserted (its
//! key and value, with what they own on the heap, plus a fixed overhead), and past the budget
//! the least useful entries are evicted. Expired entries are pruned every `ttl` by the first
//! access after that is due, whether the cache is full or not. The map is a
//! [`quick_cache`] sharded cache, so lookups from the per-core runtimes do not queue on one
//! lock (docs/architecture.md, "Caches"; docs/performance.md for the measurements).

use std::{
    borrow::Borrow,
    hash::Hash,
    mem::size_of,
    sync::{
        atomic::{AtomicU64, Ordering},
        PoisonError, RwLock,
    },
    time::{Duration, Instant},
};

use quick_cache::{sync::Cache, Weighter};

/// Default lifetime of a cached entry: well inside the 2 s bound on cross-process staleness.
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);
/// Byte budget of a cache made with [`TtlCache::new`].
pub const DEFAULT_BUDGET: u64 = 16 * 1024 * 1024;
/// Bytes counted for each entry beyond its key and value: its date, the map's own bookkeeping
/// and the slack of its table.
pub const ENTRY_OVERHEAD: usize = 64;
/// Expired entries are pruned at most this often, however short the lifetime.
const MIN_PRUNE_INTERVAL: Duration = Duration::from_millis(10);

/// What a key and its value own on the heap, in bytes (their inline size is counted anyway).
pub type HeapBytes<K, V> = fn(&K, &V) -> usize;

/// How much a cache holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Entries, fresh or expired but not yet pruned.
    pub entries: usize,
    /// Their weight in bytes, as counted against the budget.
    pub bytes: u64,
}

impl std::ops::Add for CacheUsage {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            entries: self.entries + other.entries,
            bytes: self.bytes + other.bytes,
        }
    }
}

/// Maps `K` to `V` for at most `ttl`, within a byte budget.
pub struct TtlCache<K, V> {
    ttl: Duration,
    entries: Cache<K, Entry<V>, Weigh<K, V>>,
    /// Bumped by every invalidation.
    generation: AtomicU64,
    /// Shared by fills, exclusive to invalidations: a fill checks its ticket and inserts as
    /// one step, so no invalidation falls between the two.
    invalidating: RwLock<()>,
    /// What `next_prune` counts from.
    epoch: Instant,
    /// Nanoseconds after `epoch` when expired entries are next pruned.
    next_prune: AtomicU64,
}

impl<K, V> std::fmt::Debug for TtlCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// A cached value and the start of the read that produced it.
#[derive(Clone)]
struct Entry<V> {
    started: Instant,
    value: V,
}

/// Weighs entries for the byte budget: inline sizes, the overhead, and what `HeapBytes` says.
struct Weigh<K, V>(HeapBytes<K, V>);

impl<K, V> Clone for Weigh<K, V> {
    fn clone(&self) -> Self {
        Self(self.0)
    }
}

impl<K, V> Weigh<K, V> {
    /// The weight of an entry that owns nothing on the heap.
    const INLINE: usize = size_of::<K>() + size_of::<Entry<V>>() + ENTRY_OVERHEAD;
}

impl<K, V> Weighter<K, Entry<V>> for Weigh<K, V> {
    fn weight(&self, key: &K, entry: &Entry<V>) -> u64 {
        let bytes = Self::INLINE.saturating_add((self.0)(key, &entry.value));
        u64::try_from(bytes).unwrap_or(u64::MAX)
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
    /// An empty cache of [`DEFAULT_BUDGET`] bytes, for keys and values that own nothing on the
    /// heap; a zero `ttl` disables caching.
    pub fn new(ttl: Duration) -> Self {
        Self::with_budget(ttl, DEFAULT_BUDGET, |_, _| 0)
    }

    /// An empty cache holding at most about `max_bytes`, entries weighed with `heap_bytes`;
    /// a zero `ttl` disables caching. Besides the entries, the map remembers the hashes of
    /// recently evicted keys (to favour keys that come back), in slots of an entry's inline
    /// size: at most half as many as entries fit the budget.
    pub fn with_budget(ttl: Duration, max_bytes: u64, heap_bytes: HeapBytes<K, V>) -> Self {
        let inline = Weigh::<K, V>::INLINE as u64;
        let items = usize::try_from(max_bytes / inline)
            .unwrap_or(usize::MAX)
            .max(1);
        Self {
            ttl,
            entries: Cache::with_weighter(items, max_bytes, Weigh(heap_bytes)),
            generation: AtomicU64::new(0),
            invalidating: RwLock::new(()),
            epoch: Instant::now(),
            next_prune: AtomicU64::new(nanos(Self::prune_interval(ttl))),
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
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.ttl.is_zero() {
            return None;
        }
        let now = Instant::now();
        self.prune_if_due(now);
        self.entries
            .get(key)
            .filter(|entry| now.saturating_duration_since(entry.started) < self.ttl)
            .map(|entry| entry.value)
    }

    /// Caches `value`, read since `ticket` was taken, under `key` — unless an invalidation
    /// happened since then, or the read took the whole lifetime.
    pub fn insert(&self, ticket: Ticket, key: K, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        self.prune_if_due(now);
        if now.saturating_duration_since(ticket.started) >= self.ttl {
            return;
        }
        let _shared = self
            .invalidating
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if self.generation.load(Ordering::SeqCst) != ticket.generation {
            return;
        }
        let entry = Entry {
            started: ticket.started,
            value,
        };
        self.entries.insert(key, entry);
    }

    /// Removes every entry for which `stale` is true, and voids reads in flight.
    pub fn remove_where(&self, stale: impl Fn(&K, &V) -> bool) {
        let _exclusive = self
            .invalidating
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.entries.retain(|key, entry| !stale(key, &entry.value));
    }

    /// Voids reads in flight without removing anything (their values may predate a change
    /// that removed nothing here).
    pub fn void_reads_in_flight(&self) {
        let _exclusive = self
            .invalidating
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Drops every expired entry now (the cache also does so every `ttl` by itself).
    pub fn prune_expired(&self) {
        let now = Instant::now();
        self.entries
            .retain(|_, entry| now.saturating_duration_since(entry.started) < self.ttl);
    }

    /// How much the cache holds.
    pub fn usage(&self) -> CacheUsage {
        CacheUsage {
            entries: self.entries.len(),
            bytes: self.entries.weight(),
        }
    }

    /// Prunes expired entries if the last pruning is `ttl` old; one caller does it.
    fn prune_if_due(&self, now: Instant) {
        let at = nanos(now.saturating_duration_since(self.epoch));
        let due = self.next_prune.load(Ordering::Relaxed);
        if at < due {
            return;
        }
        let next = at.saturating_add(nanos(Self::prune_interval(self.ttl)));
        if self
            .next_prune
            .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.prune_expired();
        }
    }

    fn prune_interval(ttl: Duration) -> Duration {
        ttl.max(MIN_PRUNE_INTERVAL)
    }
}

/// `duration` in nanoseconds, saturating (584 years).
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// A cache of lookups that may find nothing: what was found, and the keys known not to exist
/// ("negative" entries), are kept apart, each within its own byte budget, so that a flood of
/// unknown keys can neither grow memory nor push out the known ones.
pub struct LookupCache<K, V> {
    found: TtlCache<K, V>,
    unknown: TtlCache<K, ()>,
}

impl<K, V> std::fmt::Debug for LookupCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LookupCache")
            .field("ttl", &self.found.ttl)
            .finish_non_exhaustive()
    }
}

/// A [`Ticket`] of a [`LookupCache`].
#[derive(Debug, Clone, Copy)]
pub struct LookupTicket {
    found: Ticket,
    unknown: Ticket,
}

impl<K: Eq + Hash, V: Clone> LookupCache<K, V> {
    /// Found values in `found`, unknown keys in `unknown` (usually with the same lifetime and
    /// a smaller budget).
    pub fn new(found: TtlCache<K, V>, unknown: TtlCache<K, ()>) -> Self {
        Self { found, unknown }
    }

    /// `Some(Some(value))` for a fresh found value, `Some(None)` for a key freshly known not
    /// to exist, `None` when the store must be asked.
    pub fn get<Q>(&self, key: &Q) -> Option<Option<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some(value) = self.found.get(key) {
            return Some(Some(value));
        }
        self.unknown.get(key).map(|()| None)
    }

    /// Starts a read whose result may be cached with [`LookupCache::insert`].
    pub fn begin(&self) -> LookupTicket {
        LookupTicket {
            found: self.found.begin(),
            unknown: self.unknown.begin(),
        }
    }

    /// Caches what a read begun at `ticket` found for `key` (`None`: nothing).
    pub fn insert(&self, ticket: LookupTicket, key: K, found: Option<V>) {
        match found {
            Some(value) => self.found.insert(ticket.found, key, value),
            None => self.unknown.insert(ticket.unknown, key, ()),
        }
    }

    /// Removes every found value for which `stale` is true, and voids reads in flight (also
    /// those about to report a key unknown).
    pub fn remove_where(&self, stale: impl Fn(&K, &V) -> bool) {
        self.unknown.void_reads_in_flight();
        self.found.remove_where(stale);
    }

    /// How much the cache holds: found values, and unknown keys.
    pub fn usage(&self) -> (CacheUsage, CacheUsage) {
        (self.found.usage(), self.unknown.usage())
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

    /// A negative cache filled with many distinct well-formed unknown keys stays within its
    /// byte budget (the old cache kept 50,000 entries of any size).
    #[test]
    fn a_flood_of_unknown_keys_stays_within_the_byte_budget() {
        const BUDGET: u64 = 256 * 1024;
        let cache: LookupCache<String, u32> = LookupCache::new(
            TtlCache::with_budget(Duration::from_secs(60), BUDGET, |k: &String, _| k.len()),
            TtlCache::with_budget(Duration::from_secs(60), BUDGET, |k: &String, _| k.len()),
        );
        for i in 0..100_000u32 {
            cache.insert(cache.begin(), format!("{i:0>32}"), None);
        }
        let (found, unknown) = cache.usage();
        assert_eq!(found, CacheUsage::default());
        assert!(unknown.bytes <= BUDGET, "{unknown:?}");
        assert!(unknown.entries > 100, "still caches: {unknown:?}");
        assert_eq!(cache.get(&format!("{:0>32}", 99_999)), Some(None));
    }

    /// Unknown keys do not push out found values: each kind has its own budget.
    #[test]
    fn unknown_keys_do_not_evict_found_values() {
        let cache: LookupCache<String, u32> = LookupCache::new(
            TtlCache::with_budget(Duration::from_secs(60), 64 * 1024, |k: &String, _| k.len()),
            TtlCache::with_budget(Duration::from_secs(60), 16 * 1024, |k: &String, _| k.len()),
        );
        cache.insert(cache.begin(), "known".to_string(), Some(7));
        for i in 0..10_000u32 {
            cache.insert(cache.begin(), format!("unknown{i}"), None);
        }
        assert_eq!(cache.get("known"), Some(Some(7)));
    }

    /// An entry larger than the whole budget is not kept at all.
    #[test]
    fn an_entry_larger_than_the_budget_is_not_kept() {
        let cache = TtlCache::with_budget(Duration::from_secs(60), 4096, |k: &String, _| k.len());
        cache.insert(cache.begin(), "k".repeat(60_000), ());
        assert_eq!(cache.usage(), CacheUsage::default());
    }

    /// Expired entries are dropped on schedule, without the cache being anywhere near full.
    #[test]
    fn expired_entries_are_pruned_on_schedule() {
        let cache = TtlCache::new(Duration::from_millis(30));
        for i in 0..1_000u32 {
            cache.insert(cache.begin(), i, i);
        }
        assert_eq!(cache.usage().entries, 1_000);
        std::thread::sleep(Duration::from_millis(70));
        // Any access after the entries expired prunes them all, not only the one it touches.
        assert_eq!(cache.get(&5_000), None);
        assert_eq!(cache.usage(), CacheUsage::default());
        cache.insert(cache.begin(), 1, 1);
        assert_eq!(cache.usage().entries, 1);
    }

    /// A read of an unknown key that was in flight during an invalidation is not cached either.
    #[test]
    fn an_invalidation_voids_negative_reads_in_flight() {
        let cache: LookupCache<&str, u32> =
            LookupCache::new(TtlCache::new(DEFAULT_TTL), TtlCache::new(DEFAULT_TTL));
        let ticket = cache.begin();
        cache.remove_where(|_, _| false);
        cache.insert(ticket, "key", None);
        assert_eq!(cache.get("key"), None);
        cache.insert(cache.begin(), "key", Some(1));
        assert_eq!(cache.get("key"), Some(Some(1)));
    }

    /// Fills and invalidations from many threads: once an invalidation has returned, no
    /// value read before it is ever seen.
    #[test]
    fn concurrent_fills_never_outlive_an_invalidation() {
        let cache = std::sync::Arc::new(TtlCache::new(Duration::from_secs(60)));
        let version = std::sync::Arc::new(AtomicU64::new(0));
        let fillers: Vec<_> = (0..4)
            .map(|_| {
                let (cache, version) = (cache.clone(), version.clone());
                std::thread::spawn(move || {
                    for _ in 0..2_000 {
                        let ticket = cache.begin();
                        let read = version.load(Ordering::SeqCst);
                        cache.insert(ticket, "row", read);
                    }
                })
            })
            .collect();
        for _ in 0..200 {
            let new = version.fetch_add(1, Ordering::SeqCst) + 1;
            cache.remove_where(|k, _| *k == "row");
            if let Some(seen) = cache.get("row") {
                assert!(seen >= new, "saw {seen} after invalidating for {new}");
            }
        }
        for filler in fillers {
            filler.join().expect("filler");
        }
    }
}
