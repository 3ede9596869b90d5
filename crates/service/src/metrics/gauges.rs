//! Gauges read when scraped, for what a process learns only by asking (its build, its database
//! pools).

use prometheus::proto::{Gauge, Metric, MetricFamily, MetricType};

use super::labels;

/// A gauge family: one metric per `(label values, value)`, under `label_names`.
pub fn gauge_family(
    name: &str,
    help: &str,
    label_names: &[&str],
    values: &[(Vec<&str>, f64)],
) -> MetricFamily {
    let metrics = values
        .iter()
        .map(|(label_values, value)| {
            let mut gauge = Gauge::default();
            gauge.set_value(*value);
            let mut metric = Metric::default();
            metric.set_gauge(gauge);
            metric.set_label(labels(label_names, label_values));
            metric
        })
        .collect();
    let mut family = MetricFamily::default();
    family.set_name(name.to_string());
    family.set_help(help.to_string());
    family.set_field_type(MetricType::GAUGE);
    family.set_metric(metrics);
    family
}
