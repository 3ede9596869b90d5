//! # tessera-gateway
//!
//! The proxy gateway (docs/api.md, "Proxy invocation"): a framework-neutral handler from an
//! `http::Request` to an `http::Response`, served by hyper in `proxy-gateway` (one runtime and
//! listener per core, [`server`]) and mounted at `/proxy` by the management server through
//! [`tessera_service::mount::ProxyHandler`].
//!
//! A request goes through named stages over one [`context::RequestContext`], in the manner of
//! pingora's `ProxyHttp` phases. Each stage is one file under `stages/` with one entry point of
//! the same name, taking the context and what the stage before produced; `Gateway::run` calls
//! them in this order and [`Gateway::handle`] ends every request in `respond`:
//!
//! ```text
//!  stages/select_proxy.rs       proxy by key (header, else query), or an ephemeral proxy
//!                               for SVC-PROXY-URL (allowed destination, no key) ........... 401 / 400
//!  stages/authenticate.rs       require_auth or ephemeral: SVC-API-KEY (of the proxy's
//!                               tenant), token:use somewhere ............................... 401 / 403
//!  stages/within_rate_limit.rs  per-proxy --rate-limit .................................... 429
//!  stages/not_quarantined.rs    its transform timed out recently: back off ................ 503
//!  stages/destination.rs        destination URL + sub-path (no dot segments) + query ...... 400
//!  stages/read_body.rs          at most --max-body-bytes, within --body-timeout ........... 413 / 408
//!  stages/detokenize.rs         body and header values: parse once, fetch the listed tokens
//!                               (still encrypted), check each may go to the destination
//!                               (its binding), bound the rendering, decrypt, render ....... 400 / 403 / 413
//!  stages/transform_request.rs  the proxy's request transform, if any ..................... 500 / class / custom
//!  stages/forward.rs            to the destination through the SSRF-guarded client ........ 502 / 504
//!  stages/transform_response.rs on a 2xx, the proxy's response transform, if any .......... 500 / class / custom
//!  stages/respond.rs            relays the destination's answer (or the transform's, or the
//!                               error) with SVC-PROXY-DESTINATION-STATUS; metrics; the log line
//! ```
//!
//! Below the stages: `shared.rs` (what every request shares: the vault, the outbound client,
//! the settings, the metrics) and `context.rs` (what one request's stages fill in; the proxy key
//! and the forwarded query are read into it once). Beside them: `transform.rs` (running a transform and applying its result, shared by
//! both transform stages), `svc.rs` (the `req.svc` management calls a transform may make),
//! `audit.rs` (the `token.detokenized` events, written before the answer leaves).
//!
//! Every failure is a [`GatewayError`], whose [`ErrorKind`] alone gives the status, the metric
//! label, the log level and the `proxy_error` body.

mod audit;
pub mod client;
pub mod config;
mod context;
pub mod destination;
pub mod error;
mod handoff;
pub mod headers;
pub mod metrics;
mod quarantine;
mod send_error;
pub mod server;
mod shared;
mod ssrf;
mod stages;
mod svc;
mod transform;

use std::sync::Arc;

use http::{Request, Response};
use tessera_domain::Vault;
use tessera_service::{
    metrics::{Registry, RequestCounter},
    mount::{Handled, LocalBody, ProxyHandler, ResponseBody},
    rate_limit::{RateLimit, RateLimiter},
};
use tessera_transform_runtime::TransformEngine;

pub use client::{ClientBuildError, ClientConfig, OutboundClient};
pub use config::{GatewayArgs, GatewayConfig};
pub use error::{ErrorKind, GatewayError};
pub use metrics::GatewayMetrics;

use audit::audited;
use context::RequestContext;
use shared::Shared;
use stages::{
    authenticate::{authenticate, look_up_key, presented_key},
    destination::destination,
    detokenize::detokenize,
    forward::forward,
    not_quarantined::not_quarantined,
    read_body::read_body,
    respond::respond,
    select_proxy::select_proxy,
    transform_request::transform_request,
    transform_response::transform_response,
    within_rate_limit::within_rate_limit,
    Answer, Halt,
};

/// The gateway: the state every request shares ([`shared::Shared`]) and the stages over it.
/// Cheap to clone; [`Gateway::fork`] gives a per-core copy with its own connection pool.
#[derive(Clone)]
pub struct Gateway {
    shared: Shared,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Builds the gateway and its TLS client; its metrics go into `registry`, answered requests
    /// into `requests` (shared with the management API of the same process).
    pub fn new(
        vault: Vault,
        config: GatewayConfig,
        registry: &Registry,
        requests: Arc<RequestCounter>,
    ) -> Result<Self, ClientBuildError> {
        Ok(Self {
            shared: Shared {
                vault,
                client: OutboundClient::new(config.client.clone())?,
                config: Arc::new(config),
                metrics: Arc::new(GatewayMetrics::new(registry, requests)),
                transforms: None,
                rate_limiter: None,
                quarantine: Arc::default(),
            },
        })
    }

    /// Limits each proxy's invocations (429 `proxy_error` with `Retry-After` above the limit),
    /// shared by every fork of this gateway.
    pub fn with_rate_limit(mut self, limit: RateLimit) -> Self {
        self.shared.rate_limiter = Some(Arc::new(RateLimiter::new(limit)));
        self
    }

    /// Runs proxies' transforms on `engine`. Without one, an invocation of a proxy that has a
    /// transform fails with a 500 proxy error instead of skipping it.
    pub fn with_transforms(mut self, engine: TransformEngine) -> Self {
        self.shared.transforms = Some(engine);
        self
    }

    /// A gateway sharing this one's vault, settings and metrics but with its own outbound
    /// connection pool, for a worker thread with its own runtime.
    pub fn fork(&self) -> Result<Self, ClientBuildError> {
        let mut fork = self.clone();
        fork.shared.client = OutboundClient::new(self.shared.config.client.clone())?;
        Ok(fork)
    }

    /// The vault (for readiness checks).
    pub fn vault(&self) -> &Vault {
        &self.shared.vault
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<GatewayMetrics> {
        &self.shared.metrics
    }

    /// Handles one invocation; `request_id` is forwarded to the destination.
    pub async fn handle(
        &self,
        req: Request<LocalBody>,
        request_id: &str,
    ) -> Response<ResponseBody> {
        let (parts, body) = req.into_parts();
        let mut ctx = RequestContext::new(parts, request_id, &self.shared.config.names);
        let gw = &self.shared;
        let result = run(gw, &mut ctx, body).await;
        let result = audited(gw, &mut ctx.audit, ctx.proxy_id, request_id, result).await;
        respond(gw, ctx, result)
    }
}

/// The stages, in order; the first failure or early answer ends the request.
async fn run(gw: &Shared, ctx: &mut RequestContext<'_>, body: LocalBody) -> Result<Answer, Halt> {
    // The API key is looked up while the proxy is found, not after (both cached).
    let key = presented_key(gw, ctx);
    let (selected, looked_up) = tokio::join!(select_proxy(gw, ctx), look_up_key(gw, key.as_ref()));
    let (proxy, caller) = authenticate(ctx, selected?, looked_up)?;
    within_rate_limit(gw, &proxy)?;
    not_quarantined(gw, &proxy)?;
    let uri = destination(ctx, &proxy)?;
    let body = read_body(gw, ctx, body).await?;
    let headers = ctx.take_headers();
    let outgoing = detokenize(gw, ctx, caller.as_ref(), headers, body).await?;
    let outgoing = transform_request(gw, ctx, &proxy, outgoing).await?;
    let answer = forward(gw, ctx, uri, outgoing).await?;
    transform_response(gw, ctx, &proxy, answer).await
}

/// Built here rather than beside the flags, so that `config.rs` stays below the gateway it
/// configures.
impl GatewayArgs {
    /// The gateway these flags describe, over `vault` (already given [`GatewayArgs::apply_to`]),
    /// with its transform engine and rate limit; its metrics go into `registry` and `requests`.
    pub fn build(
        &self,
        vault: Vault,
        registry: &tessera_service::metrics::Registry,
        requests: std::sync::Arc<tessera_service::metrics::RequestCounter>,
    ) -> Result<Gateway, config::BuildError> {
        self.validate()?;
        let engine = tessera_transform_runtime::TransformEngine::new(self.engine_config()?)?;
        let mut gateway =
            Gateway::new(vault, self.config(), registry, requests)?.with_transforms(engine);
        if let Some(limit) = self.rate_limit()? {
            gateway = gateway.with_rate_limit(limit);
        }
        Ok(gateway)
    }
}

impl ProxyHandler for Gateway {
    fn handle<'a>(&'a self, req: Request<LocalBody>, request_id: &'a str) -> Handled<'a> {
        Box::pin(Gateway::handle(self, req, request_id))
    }
}
