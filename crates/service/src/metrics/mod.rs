//! Prometheus metrics whose hot path touches no shared cache line.
//!
//! A counter or histogram here is an array of shards, one cache line (or more) each. A thread
//! picks its shard once (round robin) and from then on adds into it with a relaxed atomic that
//! no other thread writes, so the gateway's per-core workers never contend on a metric, unlike
//! a single atomic per counter that every core bounces between its caches on every request.
//! `/metrics` sums the shards when scraped ([`Registry::render`]).
//!
//! Labels never carry tenant ids, token ids or keys: only fixed sets (status class, reason).
//!
//! One file per kind: `counter.rs` (counters over fixed label values), `histogram.rs`
//! (latency), `routes.rs` (the API's latency per route), `gauges.rs` (values read when
//! scraped), `registry.rs` (what `/metrics` renders), `requests.rs` (answered requests by
//! component and status class), `audit.rs` (the audit writer's totals).

use std::sync::atomic::{AtomicUsize, Ordering};

use prometheus::proto::LabelPair;

mod audit;
mod counter;
mod gauges;
mod histogram;
mod registry;
mod requests;
mod routes;

pub use audit::AuditMetrics;
pub use counter::CounterVec;
pub use gauges::gauge_family;
pub use histogram::{Histogram, LATENCY_BUCKETS};
pub use registry::{Family, Registry};
pub use requests::{status_class_index, Component, RequestCounter, STATUS_CLASSES};
pub use routes::RouteLatency;

/// `Content-Type` of [`Registry::render`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Shards per metric. Threads beyond this many share shards (still correct, merely contended).
pub(crate) const SHARDS: usize = 16;

thread_local! {
    static SHARD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS
    };
}

pub(crate) fn shard() -> usize {
    SHARD.with(|s| *s)
}

/// One shard, alone on its cache lines.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// Label pairs, sorted by name as the exposition format expects.
pub(crate) fn labels(names: &[&str], values: &[&str]) -> Vec<LabelPair> {
    let mut pairs: Vec<LabelPair> = names
        .iter()
        .zip(values)
        .map(|(n, v)| {
            let mut pair = LabelPair::default();
            pair.set_name((*n).to_string());
            pair.set_value((*v).to_string());
            pair
        })
        .collect();
    pairs.sort_by(|a, b| a.name().cmp(b.name()));
    pairs
}
#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use super::*;

    #[test]
    fn shards_sum_across_threads_and_render() {
        let registry = Registry::new();
        let requests = Arc::new(RequestCounter::new());
        let latency = Arc::new(Histogram::new("t_seconds", "latency", LATENCY_BUCKETS));
        registry.register(requests.clone());
        registry.register(latency.clone());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (r, l) = (requests.clone(), latency.clone());
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        r.record(Component::Gateway, 200);
                        l.observe(Duration::from_micros(70));
                    }
                    r.record(Component::Api, 404);
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let text = registry.render();
        assert!(
            text.contains(r#"tessera_http_requests_total{class="2xx",component="gateway"} 4000"#),
            "{text}"
        );
        assert!(text.contains(r#"tessera_http_requests_total{class="4xx",component="api"} 4"#));
        assert!(text.contains("t_seconds_count 4000"), "{text}");
        assert!(
            text.contains(r#"t_seconds_bucket{le="0.0001"} 4000"#),
            "{text}"
        );
        assert!(
            text.contains(r#"t_seconds_bucket{le="0.00005"} 0"#),
            "{text}"
        );
        assert_eq!(latency.quantile_bound(0.5), Some(0.0001));
        assert_eq!(latency.count(), 4000);
    }
}
