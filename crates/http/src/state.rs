//! What every handler shares.

use std::sync::Arc;

use tessera_domain::{ApplicationId, Vault};

use crate::{
    gateway::Gateway,
    metrics::Metrics,
    rate_limit::{RateLimit, RateLimiter},
};

/// Tunables of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Largest request body accepted, in bytes (413 above).
    pub max_body_bytes: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: crate::DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// Shared application state: the vault, the HTTP configuration, metrics and (optionally)
/// the gateway mounted at `/proxy`.
#[derive(Debug, Clone)]
pub struct ApiState {
    /// The use-cases.
    pub vault: Vault,
    /// HTTP tunables.
    pub config: ApiConfig,
    /// Process metrics, served at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// The proxy gateway, when this process also serves `/proxy`.
    pub gateway: Option<Arc<Gateway>>,
    /// Per-application request limit of management calls, when configured.
    pub rate_limiter: Option<Arc<RateLimiter<ApplicationId>>>,
}

impl ApiState {
    /// State for `vault` with `config`, fresh metrics and no gateway.
    pub fn new(vault: Vault, config: ApiConfig) -> Self {
        Self {
            vault,
            config,
            metrics: Arc::new(Metrics::new()),
            gateway: None,
            rate_limiter: None,
        }
    }

    /// Limits each application's management calls (429 with `Retry-After` above the limit).
    pub fn with_rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limiter = Some(Arc::new(RateLimiter::new(limit)));
        self
    }

    /// Mounts `gateway` at `/proxy` and shares its metrics.
    pub fn with_gateway(mut self, gateway: Arc<Gateway>) -> Self {
        self.metrics = gateway.metrics().clone();
        self.gateway = Some(gateway);
        self
    }
}
