//! The audit writer's totals, read when scraped.

use prometheus::proto::{Counter, Gauge, Metric, MetricFamily, MetricType};

use super::Family;

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
