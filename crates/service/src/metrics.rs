//! Prometheus metrics whose hot path touches no shared cache line.
//!
//! A counter or histogram here is an array of shards, one cache line (or more) each. A thread
//! picks its shard once (round robin) and from then on adds into it with a relaxed atomic that
//! no other thread writes, so the gateway's per-core workers never contend on a metric, unlike
//! a single atomic per counter that every core bounces between its caches on every request.
//! `/metrics` sums the shards when scraped ([`Registry::render`]).
//!
//! Labels never carry tenant ids, token ids or keys: only fixed sets (status class, reason).

use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use prometheus::{
    core::{Collector, Desc},
    proto::{
        Bucket, Counter, Gauge, Histogram as HistogramProto, LabelPair, Metric, MetricFamily,
        MetricType,
    },
    Encoder, TextEncoder,
};

/// `Content-Type` of [`Registry::render`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Shards per metric. Threads beyond this many share shards (still correct, merely contended).
const SHARDS: usize = 16;

thread_local! {
    static SHARD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS
    };
}

fn shard() -> usize {
    SHARD.with(|s| *s)
}

/// One shard, alone on its cache lines.
#[repr(align(128))]
struct Padded<T>(T);

/// Counters over a fixed set of label values (e.g. the five status classes), sharded.
pub struct CounterVec {
    name: &'static str,
    help: &'static str,
    label_names: &'static [&'static str],
    label_values: Vec<Vec<&'static str>>,
    shards: Box<[Padded<Box<[AtomicU64]>>]>,
}

impl std::fmt::Debug for CounterVec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CounterVec")
            .field("name", &self.name)
            .finish()
    }
}

impl CounterVec {
    /// Counters named `name`, one per entry of `label_values` (each a value for every name in
    /// `label_names`). With no label names, one counter.
    pub fn new(
        name: &'static str,
        help: &'static str,
        label_names: &'static [&'static str],
        label_values: Vec<Vec<&'static str>>,
    ) -> Self {
        let series = label_values.len().max(1);
        Self {
            name,
            help,
            label_names,
            shards: (0..SHARDS)
                .map(|_| Padded((0..series).map(|_| AtomicU64::new(0)).collect()))
                .collect(),
            label_values,
        }
    }

    /// Adds `n` to the series at `index` (its position in `label_values`).
    pub fn add(&self, index: usize, n: u64) {
        if let Some(counter) = self.shards[shard()].0.get(index) {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds one to the series at `index`.
    pub fn inc(&self, index: usize) {
        self.add(index, 1);
    }

    /// The total of the series at `index`, over every shard.
    pub fn get(&self, index: usize) -> u64 {
        self.shards
            .iter()
            .map(|s| s.0.get(index).map_or(0, |c| c.load(Ordering::Relaxed)))
            .sum()
    }

    fn family(&self) -> MetricFamily {
        let mut family = MetricFamily::default();
        family.set_name(self.name.to_string());
        family.set_help(self.help.to_string());
        family.set_field_type(MetricType::COUNTER);
        let series = if self.label_values.is_empty() {
            vec![Vec::new()]
        } else {
            self.label_values.clone()
        };
        let metrics = series
            .iter()
            .enumerate()
            .map(|(i, values)| {
                let mut counter = Counter::default();
                counter.set_value(self.get(i) as f64);
                let mut metric = Metric::from_label(labels(self.label_names, values));
                metric.set_counter(counter);
                metric
            })
            .collect();
        family.set_metric(metrics);
        family
    }
}

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

struct HistogramShard {
    /// Observations at or below each bound; the last slot is above every bound.
    counts: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
}

/// A latency histogram, sharded.
pub struct Histogram {
    name: &'static str,
    help: &'static str,
    bounds: &'static [f64],
    shards: Box<[Padded<HistogramShard>]>,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("name", &self.name)
            .finish()
    }
}

/// Latency buckets, in seconds: 50 µs to 25 s.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 25.0,
];

impl Histogram {
    /// A histogram over `bounds` (seconds, ascending).
    pub fn new(name: &'static str, help: &'static str, bounds: &'static [f64]) -> Self {
        Self {
            name,
            help,
            bounds,
            shards: (0..SHARDS)
                .map(|_| {
                    Padded(HistogramShard {
                        counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
                        sum_nanos: AtomicU64::new(0),
                    })
                })
                .collect(),
        }
    }

    /// Records one observation.
    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let slot = self.bounds.partition_point(|b| *b < seconds);
        let shard = &self.shards[shard()].0;
        if let Some(count) = shard.counts.get(slot) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        shard.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// How many observations were recorded.
    pub fn count(&self) -> u64 {
        self.shards
            .iter()
            .flat_map(|s| s.0.counts.iter())
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// The upper bound of the bucket holding the `q`-quantile (e.g. 0.5 for the median): an
    /// estimate at bucket resolution, `None` when empty.
    pub fn quantile_bound(&self, q: f64) -> Option<f64> {
        let counts = self.bucket_counts();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = (q * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(self.bounds.get(i).copied().unwrap_or(f64::INFINITY));
            }
        }
        None
    }

    fn bucket_counts(&self) -> Vec<u64> {
        (0..=self.bounds.len())
            .map(|i| {
                self.shards
                    .iter()
                    .map(|s| s.0.counts.get(i).map_or(0, |c| c.load(Ordering::Relaxed)))
                    .sum()
            })
            .collect()
    }

    fn family(&self) -> MetricFamily {
        let counts = self.bucket_counts();
        let mut cumulative = 0;
        let buckets = self
            .bounds
            .iter()
            .zip(&counts)
            .map(|(bound, c)| {
                cumulative += c;
                let mut b = Bucket::default();
                b.set_upper_bound(*bound);
                b.set_cumulative_count(cumulative);
                b
            })
            .collect();
        let total: u64 = counts.iter().sum();
        let sum_nanos: u64 = self
            .shards
            .iter()
            .map(|s| s.0.sum_nanos.load(Ordering::Relaxed))
            .sum();
        let mut h = HistogramProto::default();
        h.set_sample_count(total);
        h.set_sample_sum(sum_nanos as f64 / 1e9);
        h.set_bucket(buckets);
        let mut metric = Metric::default();
        metric.set_histogram(h);
        let mut family = MetricFamily::default();
        family.set_name(self.name.to_string());
        family.set_help(self.help.to_string());
        family.set_field_type(MetricType::HISTOGRAM);
        family.set_metric(vec![metric]);
        family
    }
}

/// Something that renders metric families when scraped.
pub trait Family: Send + Sync {
    /// The families, summed over shards.
    fn families(&self) -> Vec<MetricFamily>;
}

impl Family for CounterVec {
    fn families(&self) -> Vec<MetricFamily> {
        vec![self.family()]
    }
}

impl Family for Histogram {
    fn families(&self) -> Vec<MetricFamily> {
        vec![self.family()]
    }
}

/// Adapts a [`Family`] to the prometheus registry.
struct Adapter {
    inner: Arc<dyn Family>,
    descs: Vec<Desc>,
}

impl Collector for Adapter {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.inner.families()
    }
}

/// A process's metrics, rendered by `GET /metrics`.
#[derive(Clone)]
pub struct Registry {
    inner: prometheus::Registry,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            inner: prometheus::Registry::new(),
        }
    }

    /// Adds `family`; a name registered twice is reported, not fatal.
    pub fn register(&self, family: Arc<dyn Family>) {
        let descs = family
            .families()
            .iter()
            .filter_map(|f| {
                Desc::new(
                    f.name().to_string(),
                    f.help().to_string(),
                    Vec::new(),
                    Default::default(),
                )
                .ok()
            })
            .collect();
        if let Err(e) = self.inner.register(Box::new(Adapter {
            inner: family,
            descs,
        })) {
            tracing::warn!(error = %e, "metric not registered");
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.inner.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The status classes requests are counted by.
pub const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The index of `status`'s class in [`STATUS_CLASSES`].
pub fn status_class_index(status: u16) -> usize {
    match status {
        100..=199 => 0,
        200..=299 => 1,
        300..=399 => 2,
        400..=499 => 3,
        _ => 4,
    }
}

/// `tessera_http_requests_total{component, class}`: answered requests, shared by the
/// management API (`api`) and the gateway (`gateway`) of one process.
#[derive(Debug)]
pub struct RequestCounter {
    counters: CounterVec,
}

/// Which part of the process answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// The management API.
    Api,
    /// The proxy gateway.
    Gateway,
}

impl Default for RequestCounter {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestCounter {
    /// Zeroed counters.
    pub fn new() -> Self {
        let values = ["api", "gateway"]
            .iter()
            .flat_map(|c| STATUS_CLASSES.iter().map(move |s| vec![*c, *s]))
            .collect();
        Self {
            counters: CounterVec::new(
                "tessera_http_requests_total",
                "HTTP requests answered, by component and status class",
                &["component", "class"],
                values,
            ),
        }
    }

    /// Counts one answered request.
    pub fn record(&self, component: Component, status: u16) {
        let base = match component {
            Component::Api => 0,
            Component::Gateway => STATUS_CLASSES.len(),
        };
        self.counters.inc(base + status_class_index(status));
    }
}

impl Family for RequestCounter {
    fn families(&self) -> Vec<MetricFamily> {
        self.counters.families()
    }
}

/// The audit writer's totals, read from its [`tessera_domain::audit::AuditLog`] when scraped:
/// `tessera_audit_events_committed_total`, `tessera_audit_batches_committed_total`,
/// `tessera_audit_commit_failures_total`, `tessera_audit_commit_seconds_total`,
/// `tessera_audit_chain_conflicts_total`, `tessera_audit_events_dropped_total`,
/// `tessera_audit_denials_folded_total` and the gauges `tessera_audit_queue_depth` and
/// `tessera_audit_events_held`. Nothing is rendered while the trail is off.
#[derive(Debug)]
pub struct AuditMetrics(pub tessera_domain::audit::AuditLog);

fn single(name: &str, help: &str, kind: MetricType, value: f64) -> MetricFamily {
    let mut family = MetricFamily::default();
    family.set_name(name.to_string());
    family.set_help(help.to_string());
    family.set_field_type(kind);
    let mut metric = Metric::default();
    if kind == MetricType::GAUGE {
        let mut gauge = Gauge::default();
        gauge.set_value(value);
        metric.set_gauge(gauge);
    } else {
        let mut counter = Counter::default();
        counter.set_value(value);
        metric.set_counter(counter);
    }
    family.set_metric(vec![metric]);
    family
}

impl Family for AuditMetrics {
    fn families(&self) -> Vec<MetricFamily> {
        let Some(s) = self.0.stats() else {
            return Vec::new();
        };
        vec![
            single(
                "tessera_audit_events_committed_total",
                "Audit events committed.",
                MetricType::COUNTER,
                s.events_committed as f64,
            ),
            single(
                "tessera_audit_batches_committed_total",
                "Audit transactions committed (events per batch = events / batches).",
                MetricType::COUNTER,
                s.batches_committed as f64,
            ),
            single(
                "tessera_audit_commit_failures_total",
                "Audit commit attempts that failed and were retried; sync requests answered 503.",
                MetricType::COUNTER,
                s.commit_failures as f64,
            ),
            single(
                "tessera_audit_commit_seconds_total",
                "Time spent in successful audit commits.",
                MetricType::COUNTER,
                s.commit_micros as f64 / 1e6,
            ),
            single(
                "tessera_audit_queue_depth",
                "Audit submissions waiting for the writer.",
                MetricType::GAUGE,
                s.queued as f64,
            ),
            single(
                "tessera_audit_chain_conflicts_total",
                "Chain appends refused because a record already held the chain's next position (tampering or a failed write): alert on any.",
                MetricType::COUNTER,
                s.chain_conflicts as f64,
            ),
            single(
                "tessera_audit_events_held",
                "Events of chains that could not be written, held and retried.",
                MetricType::GAUGE,
                s.events_held as f64,
            ),
            single(
                "tessera_audit_events_dropped_total",
                "Held events dropped because too many were held.",
                MetricType::COUNTER,
                s.events_dropped as f64,
            ),
            single(
                "tessera_audit_denials_folded_total",
                "Identical refusals folded into aggregate events (count field).",
                MetricType::COUNTER,
                s.denials_folded as f64,
            ),
            single(
                "tessera_audit_windows_total",
                "Commits held open for more events under load.",
                MetricType::COUNTER,
                s.windows_held as f64,
            ),
            single(
                "tessera_audit_window_seconds_total",
                "Time commits were held open for more events (window per commit = seconds / windows).",
                MetricType::COUNTER,
                s.window_micros as f64 / 1e6,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
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
