//! Prometheus metrics shared by the management API and the gateway (`GET /metrics`).
//!
//! Labels never carry token ids, proxy keys or tenant ids: only the serving component and the
//! status class.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, Opts, Registry, TextEncoder,
};

/// The process's metrics.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    processing: Histogram,
    destination: Histogram,
    detokenized: IntCounter,
    errors: IntCounterVec,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 25.0,
];

impl Metrics {
    /// A fresh registry with every metric registered.
    ///
    /// # Panics
    /// Never in practice: the metric definitions are static and valid.
    #[allow(clippy::expect_used)]
    pub fn new() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "tessera_http_requests_total",
                "HTTP requests answered, by component and status class",
            ),
            &["component", "class"],
        )
        .expect("valid metric");
        let processing = Histogram::with_opts(
            HistogramOpts::new(
                "tessera_gateway_processing_seconds",
                "Time the gateway spends on a proxied request, excluding the wait for the destination",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .expect("valid metric");
        let destination = Histogram::with_opts(
            HistogramOpts::new(
                "tessera_gateway_destination_seconds",
                "Time from sending a proxied request until the destination's response headers arrive",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .expect("valid metric");
        let detokenized = IntCounter::new(
            "tessera_tokens_detokenized_total",
            "Tokens substituted into proxied requests",
        )
        .expect("valid metric");
        let errors = IntCounterVec::new(
            Opts::new(
                "tessera_gateway_errors_total",
                "Proxy errors answered by the gateway itself, by reason (destination errors are not counted)",
            ),
            &["reason"],
        )
        .expect("valid metric");
        for m in [
            Box::new(errors.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(requests.clone()),
            Box::new(processing.clone()),
            Box::new(destination.clone()),
            Box::new(detokenized.clone()),
        ] {
            registry.register(m).expect("unique metric names");
        }
        Self {
            registry,
            requests,
            processing,
            destination,
            detokenized,
            errors,
        }
    }

    /// Counts a proxy error by reason: `bad_request`, `unauthenticated`, `forbidden`,
    /// `too_large`, `rate_limited`, `blocked`, `unreachable`, `timeout`, `transform`, `internal`.
    pub fn record_error(&self, reason: &str) {
        self.errors.with_label_values(&[reason]).inc();
    }

    /// Counts an answered request of `component` (`api` or `gateway`).
    pub fn record_request(&self, component: &str, status: u16) {
        let class = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.requests.with_label_values(&[component, class]).inc();
    }

    /// Records gateway processing time (destination wait excluded).
    pub fn observe_processing(&self, seconds: f64) {
        self.processing.observe(seconds);
    }

    /// Records destination time.
    pub fn observe_destination(&self, seconds: f64) {
        self.destination.observe(seconds);
    }

    /// Counts substituted tokens.
    pub fn add_detokenized(&self, n: usize) {
        self.detokenized
            .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// `Content-Type` of [`Metrics::render`].
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histograms() {
        let m = Metrics::new();
        m.record_request("gateway", 201);
        m.record_request("api", 404);
        m.observe_processing(0.0002);
        m.observe_destination(0.01);
        m.add_detokenized(2);
        m.record_error("timeout");
        let text = m.render();
        assert!(
            text.contains(r#"tessera_http_requests_total{class="2xx",component="gateway"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"tessera_http_requests_total{class="4xx",component="api"} 1"#));
        assert!(text.contains("tessera_tokens_detokenized_total 2"));
        assert!(text.contains(r#"tessera_gateway_errors_total{reason="timeout"} 1"#));
        assert!(text.contains("tessera_gateway_processing_seconds_count 1"));
        assert!(text.contains("tessera_gateway_destination_seconds_bucket"));
    }
}
