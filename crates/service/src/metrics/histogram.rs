//! Latency histograms, sharded.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use prometheus::proto::{Bucket, Histogram as HistogramProto, Metric, MetricFamily, MetricType};

use super::{shard, Family, Padded, SHARDS};

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
        let mut family = MetricFamily::default();
        family.set_name(self.name.to_string());
        family.set_help(self.help.to_string());
        family.set_field_type(MetricType::HISTOGRAM);
        family.set_metric(vec![self.metric()]);
        family
    }

    /// The observations so far as one metric (without labels), summed over shards.
    pub(crate) fn metric(&self) -> Metric {
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
        metric
    }
}

impl Family for Histogram {
    fn families(&self) -> Vec<MetricFamily> {
        vec![self.family()]
    }
}
