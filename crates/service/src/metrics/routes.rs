//! `tessera_api_request_duration_seconds`: the management API's latency per route and method.
//!
//! A route is the pattern it was registered under (`/tokens/{id}`), never the path asked for,
//! so the label values are the application's own fixed set (plus `unmatched`); methods outside
//! the standard ones count as `other`. Not on the gateway's hot path: the API records here.

use std::{
    collections::BTreeMap,
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

/// One route's histograms, by method.
type ByMethod = Vec<(&'static str, Arc<Histogram>)>;

use prometheus::proto::{MetricFamily, MetricType};

use super::{labels, Family, Histogram, LATENCY_BUCKETS};

/// The metric's name.
pub(crate) const NAME: &str = "tessera_api_request_duration_seconds";

/// The route label of a request that matched no route.
pub(crate) const UNMATCHED: &str = "unmatched";

/// The methods counted under their own name.
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// One histogram per (route, method), made on first use; a request looks its route up by
/// `&str` (no allocation once the pair exists).
#[derive(Debug, Default)]
pub struct RouteLatency {
    by_route: RwLock<BTreeMap<String, ByMethod>>,
}

impl RouteLatency {
    /// No observations yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a request to `route` (its registered pattern, or `None` when none matched)
    /// with `method` that took `elapsed`.
    pub fn observe(&self, route: Option<&str>, method: &str, elapsed: Duration) {
        let route = route.unwrap_or(UNMATCHED);
        let method = METHODS
            .iter()
            .copied()
            .find(|m| *m == method)
            .unwrap_or("other");
        let found = self
            .by_route
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(route)
            .and_then(|methods| methods.iter().find(|(m, _)| *m == method))
            .map(|(_, h)| Arc::clone(h));
        let histogram = match found {
            Some(h) => h,
            None => {
                let mut by_route = self
                    .by_route
                    .write()
                    .unwrap_or_else(PoisonError::into_inner);
                let methods = by_route.entry(route.to_string()).or_default();
                match methods.iter().find(|(m, _)| *m == method) {
                    Some((_, h)) => Arc::clone(h),
                    None => {
                        let h = Arc::new(Histogram::new(NAME, "", LATENCY_BUCKETS));
                        methods.push((method, Arc::clone(&h)));
                        methods.sort_by_key(|(m, _)| *m);
                        h
                    }
                }
            }
        };
        histogram.observe(elapsed);
    }
}

impl Family for RouteLatency {
    fn families(&self) -> Vec<MetricFamily> {
        let by_route = self.by_route.read().unwrap_or_else(PoisonError::into_inner);
        if by_route.is_empty() {
            return Vec::new();
        }
        let metrics = by_route
            .iter()
            .flat_map(|(route, methods)| {
                methods.iter().map(move |(method, histogram)| {
                    let mut metric = histogram.metric();
                    metric.set_label(labels(&["method", "route"], &[method, route]));
                    metric
                })
            })
            .collect();
        let mut family = MetricFamily::default();
        family.set_name(NAME.to_string());
        family.set_help(
            "Management API requests by route pattern and method: seconds from arrival to answer."
                .to_string(),
        );
        family.set_field_type(MetricType::HISTOGRAM);
        family.set_metric(metrics);
        vec![family]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Registry;

    #[test]
    fn each_route_and_method_has_its_histogram_and_labels_stay_bounded() {
        let registry = Registry::new();
        let routes = Arc::new(RouteLatency::new());
        registry.register(routes.clone());
        routes.observe(Some("/tokens/{id}"), "GET", Duration::from_millis(3));
        routes.observe(Some("/tokens/{id}"), "GET", Duration::from_millis(30));
        routes.observe(Some("/tokens"), "POST", Duration::from_millis(1));
        routes.observe(None, "BREW", Duration::from_millis(1));
        let text = registry.render();
        assert!(
            text.contains(
                r#"tessera_api_request_duration_seconds_count{method="GET",route="/tokens/{id}"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"tessera_api_request_duration_seconds_bucket{method="GET",route="/tokens/{id}",le="0.005"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"tessera_api_request_duration_seconds_count{method="POST",route="/tokens"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"tessera_api_request_duration_seconds_count{method="other",route="unmatched"} 1"#
            ),
            "{text}"
        );
    }
}
