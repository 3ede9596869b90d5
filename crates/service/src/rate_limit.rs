//! Optional per-credential rate limits (docs/api.md, "Errors": 429 "where configured"): a token
//! bucket per application on the management API and per proxy on the gateway.
//!
//! Limits are per process: with N processes behind a load balancer a credential may make up to
//! N times the rate. That keeps every request free of shared state; a limit shared across
//! processes belongs in the load balancer or an external limiter.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::Mutex,
    time::{Duration, Instant},
};

/// How many requests a key may make: `per_second` sustained, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Sustained requests per second (> 0).
    pub per_second: f64,
    /// Requests allowed at once after a quiet period (≥ 1).
    pub burst: f64,
}

impl RateLimit {
    /// `per_second` with a burst of `burst` (raised to at least 1).
    pub fn new(per_second: f64, burst: f64) -> Option<Self> {
        (per_second.is_finite() && per_second > 0.0 && burst.is_finite()).then_some(Self {
            per_second,
            burst: burst.max(1.0),
        })
    }
}

/// Above this many tracked keys, buckets that have refilled completely are dropped (they are
/// indistinguishable from new ones), so memory follows the number of recently active keys.
const PRUNE_ABOVE: usize = 10_000;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets keyed by credential.
pub struct RateLimiter<K> {
    limit: RateLimit,
    buckets: Mutex<Buckets<K>>,
}

struct Buckets<K> {
    map: HashMap<K, Bucket>,
    /// When full buckets were last dropped: at most once a second, so that many keys that are
    /// all still refilling do not make every check scan the map.
    pruned: Instant,
}

impl<K> std::fmt::Debug for RateLimiter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl<K: Eq + Hash + Clone> RateLimiter<K> {
    /// Buckets for `limit`, all starting full.
    pub fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            buckets: Mutex::new(Buckets {
                map: HashMap::new(),
                pruned: Instant::now(),
            }),
        }
    }

    /// Takes one request from `key`'s bucket, or says how long until one is available.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.check_at(key, Instant::now(), 1.0)
    }

    /// Takes `units` from `key`'s bucket at once, or none of them and says how long until
    /// they are all available (a wait that never ends when `units` is above the burst). For
    /// limits that count what a request does (tokens created) rather than requests.
    pub fn check_units(&self, key: &K, units: u32) -> Result<(), Duration> {
        if units == 0 {
            return Ok(());
        }
        self.check_at(key, Instant::now(), f64::from(units))
    }

    /// The limit the buckets hold.
    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Whether `key`'s bucket holds a request now, without taking it: for limits counted only
    /// on some outcomes (failed sign-ins), checked before the attempt and taken after it.
    pub fn peek(&self, key: &K) -> Result<(), Duration> {
        let RateLimit { per_second, burst } = self.limit;
        let now = Instant::now();
        let buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(bucket) = buckets.map.get(key) else {
            return Ok(());
        };
        let tokens = (bucket.tokens
            + now.saturating_duration_since(bucket.at).as_secs_f64() * per_second)
            .min(burst);
        if tokens >= 1.0 {
            Ok(())
        } else {
            Err(Duration::try_from_secs_f64((1.0 - tokens) / per_second).unwrap_or(Duration::MAX))
        }
    }

    fn check_at(&self, key: &K, now: Instant, units: f64) -> Result<(), Duration> {
        let RateLimit { per_second, burst } = self.limit;
        // A poisoned lock only means another thread panicked mid-update of a counter.
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if buckets.map.len() >= PRUNE_ABOVE
            && now.saturating_duration_since(buckets.pruned) >= Duration::from_secs(1)
        {
            buckets.pruned = now;
            buckets.map.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_second < burst
            });
        }
        let bucket = buckets.map.entry(key.clone()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refill = now.saturating_duration_since(bucket.at).as_secs_f64() * per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.at = now;
        if bucket.tokens >= units {
            bucket.tokens -= units;
            Ok(())
        } else if units > burst {
            Err(Duration::MAX)
        } else {
            // A tiny rate can make the wait overflow a Duration: cap it.
            Err(
                Duration::try_from_secs_f64((units - bucket.tokens) / per_second)
                    .unwrap_or(Duration::MAX),
            )
        }
    }
}

/// `Retry-After` for a wait: whole seconds, rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    // `as` saturates on overflow; the value is a positive whole number of seconds.
    wait.as_secs_f64().ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_does_not_take() {
        let limiter = RateLimiter::new(RateLimit::new(0.001, 2.0).expect("limit"));
        for _ in 0..5 {
            assert!(limiter.peek(&"a").is_ok(), "peeking takes nothing");
        }
        assert!(limiter.check(&"a").is_ok() && limiter.check(&"a").is_ok());
        assert!(limiter.peek(&"a").is_err(), "empty now");
        assert!(limiter.peek(&"b").is_ok(), "another key");
    }

    #[test]
    fn bursts_then_refills_at_the_rate() {
        let limiter = RateLimiter::new(RateLimit::new(2.0, 3.0).expect("limit"));
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check_at(&"a", t0, 1.0).is_ok());
        }
        let wait = limiter.check_at(&"a", t0, 1.0).expect_err("burst spent");
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-9, "{wait:?}");
        assert!(
            limiter.check_at(&"b", t0, 1.0).is_ok(),
            "keys are independent"
        );
        let later = t0 + Duration::from_millis(500);
        assert!(
            limiter.check_at(&"a", later, 1.0).is_ok(),
            "one token after 0.5 s"
        );
        assert!(limiter.check_at(&"a", later, 1.0).is_err());
        let much_later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert!(
                limiter.check_at(&"a", much_later, 1.0).is_ok(),
                "refills to the burst only"
            );
        }
        assert!(limiter.check_at(&"a", much_later, 1.0).is_err());
    }

    #[test]
    fn full_buckets_are_pruned() {
        let limiter = RateLimiter::new(RateLimit::new(1000.0, 1.0).expect("limit"));
        let t0 = Instant::now();
        for i in 0..PRUNE_ABOVE {
            assert!(limiter.check_at(&i, t0, 1.0).is_ok());
        }
        // A second later every bucket is full again: the next check prunes them all.
        assert!(limiter
            .check_at(&usize::MAX, t0 + Duration::from_secs(1), 1.0)
            .is_ok());
        assert_eq!(limiter.buckets.lock().map(|b| b.map.len()).unwrap_or(0), 1);
    }

    #[test]
    fn a_tiny_rate_does_not_overflow() {
        let limiter = RateLimiter::new(RateLimit::new(1e-300, 1.0).expect("limit"));
        let t0 = Instant::now();
        assert!(limiter.check_at(&"a", t0, 1.0).is_ok());
        let wait = limiter.check_at(&"a", t0, 1.0).expect_err("spent");
        assert_eq!(wait, Duration::MAX);
        assert_eq!(retry_after_secs(wait), u64::MAX);
    }

    #[test]
    fn units_are_taken_all_or_none() {
        let limiter = RateLimiter::new(RateLimit::new(1.0, 10.0).expect("limit"));
        assert!(limiter.check_units(&"a", 7).is_ok());
        let wait = limiter.check_units(&"a", 4).expect_err("only 3 left");
        assert!((wait.as_secs_f64() - 1.0).abs() < 0.01, "{wait:?}");
        assert!(limiter.check_units(&"a", 3).is_ok(), "nothing was taken");
        assert!(limiter.check_units(&"a", 0).is_ok());
        assert_eq!(
            limiter.check_units(&"b", 11),
            Err(Duration::MAX),
            "above the burst"
        );
        assert!(limiter.check_units(&"b", 10).is_ok(), "and it took nothing");
    }

    #[test]
    fn limits_and_retry_after() {
        assert!(RateLimit::new(0.0, 1.0).is_none());
        assert!(RateLimit::new(f64::NAN, 1.0).is_none());
        assert_eq!(RateLimit::new(5.0, 0.0).map(|l| l.burst), Some(1.0));
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
    }
}
