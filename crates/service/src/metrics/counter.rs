//! Counters over a fixed set of label values, sharded.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus::proto::{Counter, Metric, MetricFamily, MetricType};

use super::{labels, shard, Family, Padded, SHARDS};

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

impl Family for CounterVec {
    fn families(&self) -> Vec<MetricFamily> {
        vec![self.family()]
    }
}
