//! The vault's lookup cache three ways: the old single-mutex map, a repaired hand-written one
//! (sharded mutexes, byte budget, scheduled pruning) and the [`TtlCache`] the vault uses (over
//! `quick_cache`). Keys are 32-character strings like proxy keys; values are shared pointers
//! like cached proxies. Run with `cargo bench -p tessera-domain --bench cache`; the numbers
//! are in docs/performance.md.

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::{
    collections::HashMap,
    hash::BuildHasher,
    hint::black_box,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, RwLock,
    },
    time::{Duration, Instant},
};

use criterion::{criterion_group, criterion_main, Criterion};
use quick_cache::DefaultHashBuilder;
use tessera_domain::cache::TtlCache;

const TTL: Duration = Duration::from_secs(60);
const BUDGET: u64 = 4 * 1024 * 1024;
const KEYS: usize = 1_000;

type Value = Arc<u64>;

/// What each contender does; `begin` + `insert` is one fill.
trait Contender: Send + Sync {
    fn get(&self, key: &str) -> Option<Value>;
    fn fill(&self, key: String, value: Value);
}

impl Contender for TtlCache<String, Value> {
    fn get(&self, key: &str) -> Option<Value> {
        TtlCache::get(self, key)
    }
    fn fill(&self, key: String, value: Value) {
        self.insert(self.begin(), key, value);
    }
}

/// The cache before: one mutex over one map, cleared when it reaches 50,000 entries.
struct Old {
    entries: Mutex<HashMap<String, (Instant, Value), DefaultHashBuilder>>,
    generation: AtomicU64,
}

impl Contender for Old {
    fn get(&self, key: &str) -> Option<Value> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(key)
            .filter(|(at, _)| at.elapsed() < TTL)
            .map(|(_, v)| v.clone())
    }
    fn fill(&self, key: String, value: Value) {
        let (generation, started) = (self.generation.load(Ordering::SeqCst), Instant::now());
        if let Ok(mut entries) = self.entries.lock() {
            if self.generation.load(Ordering::SeqCst) != generation {
                return;
            }
            if entries.len() >= 50_000 {
                entries.retain(|_, (at, _)| at.elapsed() < TTL);
                if entries.len() >= 50_000 {
                    entries.clear();
                }
            }
            entries.insert(key, (started, value));
        }
    }
}

/// The cache repaired by hand: 16 mutex-guarded shards, each within its share of the byte
/// budget (expired entries first, then a quarter of the shard evicted), pruned every `TTL`; fills
/// hold an invalidation lock shared, as [`TtlCache`] does.
struct Sharded {
    shards: Box<[Mutex<Shard>]>,
    hasher: DefaultHashBuilder,
    generation: AtomicU64,
    invalidating: RwLock<()>,
    shard_budget: usize,
}

struct Shard {
    map: HashMap<String, (Instant, Value), DefaultHashBuilder>,
    bytes: usize,
    next_prune: Instant,
}

impl Sharded {
    fn new() -> Self {
        let shards = (0..16)
            .map(|_| {
                Mutex::new(Shard {
                    map: HashMap::default(),
                    bytes: 0,
                    next_prune: Instant::now() + TTL,
                })
            })
            .collect();
        Self {
            shards,
            hasher: DefaultHashBuilder::default(),
            generation: AtomicU64::new(0),
            invalidating: RwLock::new(()),
            shard_budget: BUDGET as usize / 16,
        }
    }

    fn shard(&self, key: &str) -> &Mutex<Shard> {
        let hash = self.hasher.hash_one(key) as usize;
        &self.shards[hash % self.shards.len()]
    }

    fn weight(key: &str) -> usize {
        key.len() + 64 + std::mem::size_of::<(String, (Instant, Value))>()
    }
}

impl Shard {
    fn make_room(&mut self, needed: usize, budget: usize, now: Instant) {
        if now >= self.next_prune || self.bytes + needed > budget {
            self.next_prune = now + TTL;
            let mut freed = 0;
            self.map.retain(|k, (at, _)| {
                let keep = now.duration_since(*at) < TTL;
                freed += if keep { 0 } else { Sharded::weight(k) };
                keep
            });
            self.bytes -= freed;
        }
        // Still over: a quarter of the shard goes in one pass (taking one key at a time from
        // the front of a map that keeps emptying its front is quadratic).
        while self.bytes + needed > budget && !self.map.is_empty() {
            let (mut seen, mut freed) = (0usize, 0);
            self.map.retain(|k, _| {
                seen += 1;
                let keep = seen % 4 != 1;
                freed += if keep { 0 } else { Sharded::weight(k) };
                keep
            });
            self.bytes -= freed;
        }
    }
}

impl Contender for Sharded {
    fn get(&self, key: &str) -> Option<Value> {
        let shard = self.shard(key).lock().ok()?;
        shard
            .map
            .get(key)
            .filter(|(at, _)| at.elapsed() < TTL)
            .map(|(_, v)| v.clone())
    }
    fn fill(&self, key: String, value: Value) {
        let (generation, started) = (self.generation.load(Ordering::SeqCst), Instant::now());
        let Ok(_shared) = self.invalidating.read() else {
            return;
        };
        if self.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        let Ok(mut shard) = self.shard(&key).lock() else {
            return;
        };
        let weight = Self::weight(&key);
        shard.make_room(weight, self.shard_budget, started);
        if let Some((old_key, _)) = shard.map.remove_entry(&key) {
            shard.bytes -= Self::weight(&old_key);
        }
        shard.map.insert(key, (started, value));
        shard.bytes += weight;
    }
}

fn contenders() -> Vec<(&'static str, Arc<dyn Contender>)> {
    vec![
        (
            "old single mutex",
            Arc::new(Old {
                entries: Mutex::default(),
                generation: AtomicU64::new(0),
            }),
        ),
        ("hand-sharded", Arc::new(Sharded::new())),
        (
            "quick_cache TtlCache",
            Arc::new(TtlCache::<String, Value>::with_budget(
                TTL,
                BUDGET,
                |k, _| k.len(),
            )),
        ),
    ]
}

fn keys() -> Vec<String> {
    (0..KEYS).map(|i| format!("{i:0>32}")).collect()
}

fn hits(c: &mut Criterion) {
    let keys = keys();
    for (name, cache) in contenders() {
        for key in &keys {
            cache.fill(key.clone(), Arc::new(1));
        }
        let mut i = 0;
        c.bench_function(&format!("cache hit, 1 thread: {name}"), |b| {
            b.iter(|| {
                i = (i + 1) % KEYS;
                black_box(cache.get(black_box(&keys[i])))
            })
        });
        // Both cores looking up at once, as the gateway's per-core runtimes do.
        c.bench_function(&format!("cache hit, 2 threads: {name}"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                std::thread::scope(|s| {
                    for t in 0..2 {
                        let (cache, keys) = (&cache, &keys);
                        s.spawn(move || {
                            for n in 0..iters as usize {
                                black_box(cache.get(&keys[(n * 7 + t) % KEYS]));
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
    }
}

/// A flood of distinct unknown keys: every request a miss and a fill, the cache at its bound.
fn fills(c: &mut Criterion) {
    for (name, cache) in contenders() {
        let mut n = 0u64;
        c.bench_function(&format!("cache miss + fill, distinct keys: {name}"), |b| {
            b.iter(|| {
                n += 1;
                let key = format!("{n:0>32}");
                if cache.get(&key).is_none() {
                    cache.fill(key, Arc::new(n));
                }
            })
        });
    }
}

criterion_group!(benches, hits, fills);
criterion_main!(benches);
