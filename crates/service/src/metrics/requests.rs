//! `tessera_http_requests_total`: answered requests by component and status class.

use prometheus::proto::MetricFamily;

use super::{CounterVec, Family};

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
