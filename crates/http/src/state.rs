//! What every handler shares.

use std::sync::Arc;

use tessera_domain::{ApplicationId, Vault};

use crate::browser::Browsers;
use tessera_service::{
    header_names::HeaderNames,
    metrics::{Registry, RequestCounter, RouteLatency},
    mount::ProxyHandler,
    rate_limit::{RateLimit, RateLimiter},
};

/// Tunables of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Largest request body accepted, in bytes (413 above).
    pub max_body_bytes: usize,
    /// The prefixed header names (`--header-prefix`): the API key, idempotency key and trace
    /// id headers.
    pub names: HeaderNames,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: tessera_service::DEFAULT_MAX_BODY_BYTES,
            names: HeaderNames::default(),
        }
    }
}

/// The process's metrics: the registry `/metrics` renders, and the answered-requests counter
/// the management API shares with a gateway of the same process.
#[derive(Debug, Clone, Default)]
pub struct ProcessMetrics {
    /// Rendered by `GET /metrics`.
    pub registry: Registry,
    /// `tessera_http_requests_total`.
    pub requests: Arc<RequestCounter>,
    /// `tessera_api_request_duration_seconds`, per route and method.
    pub routes: Arc<RouteLatency>,
}

impl ProcessMetrics {
    /// A registry holding the request counter, the latency per route and the build's
    /// identity (`tessera_build_info`).
    pub fn new() -> Self {
        let metrics = Self {
            registry: Registry::new(),
            requests: Arc::new(RequestCounter::new()),
            routes: Arc::new(RouteLatency::new()),
        };
        metrics.registry.register(metrics.requests.clone());
        metrics.registry.register(metrics.routes.clone());
        metrics
            .registry
            .register(Arc::new(tessera_service::build_info::BuildInfoMetric));
        metrics
    }
}

/// Shared application state: the vault, the HTTP configuration, metrics and (optionally)
/// the handler mounted at `/proxy`.
#[derive(Clone)]
pub struct ApiState {
    /// The use-cases.
    pub vault: Vault,
    /// HTTP tunables.
    pub config: ApiConfig,
    /// Process metrics, served at `/metrics`.
    pub metrics: ProcessMetrics,
    /// The proxy gateway, when this process also serves `/proxy`.
    pub proxy: Option<Arc<dyn ProxyHandler>>,
    /// Per-application request limit of management calls, when configured.
    pub rate_limiter: Option<Arc<RateLimiter<ApplicationId>>>,
    /// Calls from web pages: the hosted fields' origin and the public keys' limit.
    pub browsers: Arc<Browsers>,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState")
            .field("config", &self.config)
            .field("proxy", &self.proxy.is_some())
            .finish_non_exhaustive()
    }
}

impl ApiState {
    /// State for `vault` with `config`, `metrics` and nothing at `/proxy`. When the vault
    /// records an audit trail, its writer's totals join `metrics` (`tessera_audit_*`).
    pub fn new(vault: Vault, config: ApiConfig, metrics: ProcessMetrics) -> Self {
        if vault.audit().is_on() {
            metrics
                .registry
                .register(Arc::new(tessera_service::metrics::AuditMetrics(
                    vault.audit().clone(),
                )));
        }
        Self {
            vault,
            config,
            metrics,
            proxy: None,
            rate_limiter: None,
            browsers: Arc::new(Browsers::default()),
        }
    }

    /// Sets what the API knows about browsers (the hosted fields' origin, the public keys'
    /// limit).
    pub fn with_browsers(mut self, browsers: Browsers) -> Self {
        self.browsers = Arc::new(browsers);
        self
    }

    /// Limits each application's management calls (429 with `Retry-After` above the limit).
    pub fn with_rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limiter = Some(Arc::new(RateLimiter::new(limit)));
        self
    }

    /// Mounts `handler` (the gateway) at `/proxy`.
    pub fn with_proxy(mut self, handler: Arc<dyn ProxyHandler>) -> Self {
        self.proxy = Some(handler);
        self
    }
}
