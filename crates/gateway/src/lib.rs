//! # tessera-gateway
//!
//! The proxy gateway (source §4.7, SUPPLEMENT §5.1): a framework-neutral handler from an
//! `http::Request` to an `http::Response`, served by hyper in `proxy-gateway` (one runtime and
//! listener per core, [`server`]) and mounted at `/proxy` by the management server through
//! [`tessera_service::mount::ProxyHandler`].
//!
//! A request goes through named stages over one [`context::RequestContext`], in the manner of
//! pingora's `ProxyHttp` phases; [`Gateway::handle`] reads top to bottom:
//!
//! ```text
//!  ephemeral_url       SVC-PROXY-URL instead of a proxy key: an ephemeral proxy ...... 400
//!   └ authenticate_ephemeral  SVC-API-KEY of any tenant, token:use somewhere ......... 401 / 403
//!  select_proxy        proxy by key (header, else query) ............................ 401
//!  authenticate        require_auth: SVC-API-KEY of the proxy's tenant, token:use ... 401 / 403
//!  not_quarantined     its transform timed out recently: back off ................... 503
//!  destination         destination URL + sub-path (no dot segments) + query ........ 400
//!  read_body           at most --max-body-bytes, within --body-timeout ............. 413 / 408
//!  detokenize          body and header values: parse once, fetch the listed tokens
//!                      (still encrypted), check each may go to the destination
//!                      (its binding), bound the rendering, decrypt, render ......... 400 / 403 / 413
//!  transform_request   the proxy's request transform, if any ....................... 500 / class / custom
//!  forward             to the destination through the SSRF-guarded client .......... 502 / 504
//!  transform_response  on a 2xx, the proxy's response transform, if any ........... 500 / class / custom
//!  respond             the answer with SVC-PROXY-DESTINATION-STATUS; metrics; the one log line
//! ```
//!
//! Every failure is a [`GatewayError`], whose [`ErrorKind`] alone gives the status, the metric
//! label, the log level and the `proxy_error` body.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

mod audit;
pub mod client;
pub mod config;
mod context;
pub mod destination;
pub mod error;
pub mod headers;
pub mod metrics;
mod quarantine;
pub mod server;
mod ssrf;
mod stages;

use std::sync::Arc;

use http::{Request, Response};
use tessera_domain::{ProxyId, Vault};
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

use context::RequestContext;
use stages::Halt;

/// The gateway: the vault, the outbound client and what every request shares. Cheap to clone;
/// [`Gateway::fork`] gives a per-core copy with its own connection pool.
#[derive(Clone)]
pub struct Gateway {
    vault: Vault,
    client: OutboundClient,
    config: Arc<GatewayConfig>,
    metrics: Arc<GatewayMetrics>,
    transforms: Option<TransformEngine>,
    rate_limiter: Option<Arc<RateLimiter<ProxyId>>>,
    quarantine: Arc<quarantine::Quarantine>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.config)
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
            vault,
            client: OutboundClient::new(config.client.clone())?,
            config: Arc::new(config),
            metrics: Arc::new(GatewayMetrics::new(registry, requests)),
            transforms: None,
            rate_limiter: None,
            quarantine: Arc::default(),
        })
    }

    /// Limits each proxy's invocations (429 `proxy_error` with `Retry-After` above the limit),
    /// shared by every fork of this gateway.
    pub fn with_rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limiter = Some(Arc::new(RateLimiter::new(limit)));
        self
    }

    /// Runs proxies' transforms on `engine`. Without one, an invocation of a proxy that has a
    /// transform fails with a 500 proxy error instead of skipping it.
    pub fn with_transforms(mut self, engine: TransformEngine) -> Self {
        self.transforms = Some(engine);
        self
    }

    /// A gateway sharing this one's vault, settings and metrics but with its own outbound
    /// connection pool, for a worker thread with its own runtime.
    pub fn fork(&self) -> Result<Self, ClientBuildError> {
        Ok(Self {
            client: OutboundClient::new(self.config.client.clone())?,
            ..self.clone()
        })
    }

    /// The vault (for readiness checks).
    pub fn vault(&self) -> &Vault {
        &self.vault
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<GatewayMetrics> {
        &self.metrics
    }

    /// Handles one invocation; `request_id` is forwarded to the destination.
    pub async fn handle(
        &self,
        req: Request<LocalBody>,
        request_id: &str,
    ) -> Response<ResponseBody> {
        let (parts, body) = req.into_parts();
        let mut ctx = RequestContext::new(parts, request_id);
        let result = self.run(&mut ctx, body).await;
        let result = self
            .audited(&mut ctx.audit, ctx.proxy_id, request_id, result)
            .await;
        self.respond(ctx, result)
    }

    /// The stages, in order; the first failure or early answer ends the request.
    async fn run(
        &self,
        ctx: &mut RequestContext<'_>,
        body: LocalBody,
    ) -> Result<Response<ResponseBody>, Halt> {
        let (proxy, caller) = match self.ephemeral_url(ctx)? {
            Some(url) => {
                let (proxy, caller) = self.authenticate_ephemeral(ctx, url).await?;
                (proxy, Some(caller))
            }
            None => {
                let proxy = self.select_proxy(ctx).await?;
                let caller = self.authenticate(ctx, &proxy).await?;
                (proxy, caller)
            }
        };
        self.not_quarantined(&proxy)?;
        let destination = self.destination(ctx, &proxy)?;
        let body = self.read_body(ctx, body).await?;
        let outgoing = self.detokenize(ctx, caller.as_ref(), body).await?;
        let outgoing = self.transform_request(ctx, &proxy, outgoing).await?;
        let answer = self.forward(ctx, destination, outgoing).await?;
        self.transform_response(ctx, &proxy, answer).await
    }
}

impl ProxyHandler for Gateway {
    fn handle<'a>(&'a self, req: Request<LocalBody>, request_id: &'a str) -> Handled<'a> {
        Box::pin(Gateway::handle(self, req, request_id))
    }
}
