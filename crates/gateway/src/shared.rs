//! What every request shares: the vault, the outbound client, the settings, the metrics, the
//! transform engine, the rate limiter and the quarantine. The stages read it; they sit above it
//! and [`crate::Gateway`] (which owns one) sits above them, so no stage reaches back up.

use std::sync::Arc;

use tessera_domain::{ProxyId, Vault};
use tessera_service::rate_limit::RateLimiter;
use tessera_transform_runtime::TransformEngine;

use crate::{client::OutboundClient, config::GatewayConfig, metrics::GatewayMetrics, quarantine};

/// The gateway's state, read by every stage. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) vault: Vault,
    pub(crate) client: OutboundClient,
    pub(crate) config: Arc<GatewayConfig>,
    pub(crate) metrics: Arc<GatewayMetrics>,
    pub(crate) transforms: Option<TransformEngine>,
    pub(crate) rate_limiter: Option<Arc<RateLimiter<ProxyId>>>,
    pub(crate) quarantine: Arc<quarantine::Quarantine>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
