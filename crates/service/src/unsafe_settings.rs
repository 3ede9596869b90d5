//! Settings that weaken a protection, said out loud.
//!
//! A flag such as `--allow-private-destinations` is right on a developer's machine and wrong on
//! a server facing the internet. Nothing in a request shows it is on, so a process started with
//! one logs a warning per setting at start-up and exposes the gauge `tessera_unsafe_setting`
//! (value 1, labelled with the flag) on `/metrics`, where monitoring can alert on it
//! (docs/operations.md, "Settings that must never reach production").

use std::sync::Arc;

use prometheus::proto::{Gauge, Metric, MetricFamily, MetricType};

use crate::metrics::{labels, Family, Registry};

/// One setting in force that weakens a protection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsafeSetting {
    /// The flag that turned it on, without dashes (`allow-private-destinations`): the metric's
    /// label.
    pub flag: &'static str,
    /// What it allows, for the warning.
    pub consequence: &'static str,
}

/// The settings of a process, rendered as `tessera_unsafe_setting{flag="…"} 1`.
#[derive(Debug)]
struct Gauges(Vec<UnsafeSetting>);

impl Family for Gauges {
    fn families(&self) -> Vec<MetricFamily> {
        let mut family = MetricFamily::default();
        family.set_name("tessera_unsafe_setting".to_string());
        family.set_help(
            "1 for each setting in force that weakens a protection (never on an internet-facing deployment)."
                .to_string(),
        );
        family.set_field_type(MetricType::GAUGE);
        let metrics = self
            .0
            .iter()
            .map(|s| {
                let mut gauge = Gauge::default();
                gauge.set_value(1.0);
                let mut metric = Metric::from_label(labels(&["flag"], &[s.flag]));
                metric.set_gauge(gauge);
                metric
            })
            .collect();
        family.set_metric(metrics);
        vec![family]
    }
}

/// Logs a warning for each of `settings` and registers their gauge in `registry` (nothing is
/// registered when there are none: the metric is absent on a safe process).
pub fn announce(settings: Vec<UnsafeSetting>, registry: &Registry) {
    if settings.is_empty() {
        return;
    }
    for s in &settings {
        tracing::warn!(flag = %format!("--{}", s.flag), "UNSAFE setting in force: {}", s.consequence);
    }
    registry.register(Arc::new(Gauges(settings)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_is_a_labelled_gauge_and_none_renders_nothing() {
        let registry = Registry::new();
        announce(Vec::new(), &registry);
        assert!(!registry.render().contains("tessera_unsafe_setting"));
        announce(
            vec![UnsafeSetting {
                flag: "allow-private-destinations",
                consequence: "proxies may reach private addresses",
            }],
            &registry,
        );
        let text = registry.render();
        assert!(
            text.contains(r#"tessera_unsafe_setting{flag="allow-private-destinations"} 1"#),
            "{text}"
        );
    }
}
