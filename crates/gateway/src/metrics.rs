//! The gateway's metrics (see `docs/architecture.md#metrics`), sharded per thread so that the
//! per-core workers never write the same cache line.

use std::{sync::Arc, time::Duration};

use tessera_service::metrics::{
    Component, CounterVec, Family, Histogram, Registry, RequestCounter, LATENCY_BUCKETS,
};

use crate::error::ErrorKind;

/// Counters and histograms of one process's gateway.
#[derive(Debug)]
pub struct GatewayMetrics {
    requests: Arc<RequestCounter>,
    /// `tessera_gateway_errors_total`'s reasons, in its label order ([`ErrorKind::labels`]).
    error_labels: Vec<&'static str>,
    errors: Arc<CounterVec>,
    detokenized: Arc<CounterVec>,
    processing: Arc<Histogram>,
    destination: Arc<Histogram>,
}

impl GatewayMetrics {
    /// The gateway's metrics, registered in `registry`; answered requests go to `requests`
    /// (shared with the management API of the same process).
    pub fn new(registry: &Registry, requests: Arc<RequestCounter>) -> Self {
        let labels = ErrorKind::labels();
        let errors = Arc::new(CounterVec::new(
            "tessera_gateway_errors_total",
            "Proxy errors answered by the gateway itself, by reason (destination errors are not counted)",
            &["reason"],
            labels.iter().map(|l| vec![*l]).collect(),
        ));
        let detokenized = Arc::new(CounterVec::new(
            "tessera_tokens_detokenized_total",
            "Tokens substituted into proxied requests",
            &[],
            Vec::new(),
        ));
        let processing = Arc::new(Histogram::new(
            "tessera_gateway_processing_seconds",
            "Time the gateway spends on a proxied request, excluding the wait for the destination",
            LATENCY_BUCKETS,
        ));
        let destination = Arc::new(Histogram::new(
            "tessera_gateway_destination_seconds",
            "Time from sending a proxied request until the destination's response headers arrive",
            LATENCY_BUCKETS,
        ));
        for family in [
            errors.clone() as Arc<dyn Family>,
            detokenized.clone(),
            processing.clone(),
            destination.clone(),
        ] {
            registry.register(family);
        }
        Self {
            requests,
            error_labels: labels,
            errors,
            detokenized,
            processing,
            destination,
        }
    }

    /// Counts one answered request.
    pub fn answered(&self, status: u16) {
        self.requests.record(Component::Gateway, status);
    }

    /// Counts a proxy error.
    pub fn error(&self, kind: ErrorKind) {
        if let Some(i) = self
            .error_labels
            .iter()
            .position(|l| *l == kind.metric_label())
        {
            self.errors.inc(i);
        }
    }

    /// Counts substituted tokens.
    pub fn detokenized(&self, n: usize) {
        self.detokenized
            .add(0, u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// Records time spent by the gateway itself and waiting for the destination.
    pub fn observe(&self, processing: Duration, destination: Duration) {
        self.processing.observe(processing);
        self.destination.observe(destination);
    }

    /// The processing-time histogram (for benchmarks reading the median).
    pub fn processing(&self) -> &Histogram {
        &self.processing
    }
}
