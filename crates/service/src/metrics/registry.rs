//! What `/metrics` renders: every registered [`Family`], through the prometheus crate.

use std::sync::Arc;

use prometheus::{
    core::{Collector, Desc},
    proto::MetricFamily,
    Encoder, TextEncoder,
};

/// Something that renders metric families when scraped.
pub trait Family: Send + Sync {
    /// The families, summed over shards.
    fn families(&self) -> Vec<MetricFamily>;
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
