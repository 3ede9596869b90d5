//! The proxy gateway (source §4.7, SUPPLEMENT §5.1): one framework-neutral handler
//! (`http::Request` in, `http::Response` out), served by hyper in `proxy-gateway` and mounted
//! in actix by `api`.
//!
//! ```text
//!  1 proxy by key (header, else query) ─ 401
//!  2 require_auth: SVC-API-KEY ─ 401, token:use somewhere ─ 403
//!  3 detokenize body + headers: parse ─ 400, one fetch of all ids, token:use each ─ 403
//!  4 request transform (when configured): reshape or refuse the request
//!  5 forward: method, destination + suffix + query, filtered headers ─ 502 / 504
//!    2xx → response transform (when configured); every response carries SVC-PROXY-DESTINATION-STATUS
//! ```

mod client;
mod error;
mod forward;
mod server;
mod transform;

pub mod actix;

use std::{collections::HashMap, sync::Arc, time::Instant};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use tessera_detokenize::{DetokenizeError, RequestTemplate, ResolvedToken, SourceSize, Values};
use tessera_domain::{
    proxy::Proxy, token::TokenView, Permission, Principal, ProxyId, TokenId, Vault,
};
use tessera_transform_runtime::TransformEngine;

pub use client::{ClientBuildError, ClientConfig, OutboundClient, SendError};
pub use error::ProxyError;
pub use server::{serve, serve_per_core};

use crate::{
    metrics::Metrics,
    rate_limit::{RateLimit, RateLimiter},
};

/// Header carrying the proxy key.
pub const PROXY_KEY_HEADER: &str = "svc-proxy-key";
/// Header carrying the caller's API key.
pub const API_KEY_HEADER: &str = "svc-api-key";
/// Response header with the destination's status.
pub const DESTINATION_STATUS_HEADER: &str = "svc-proxy-destination-status";

/// Body of gateway responses: a buffered error or the destination's streamed body.
pub type ProxyBody = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// Gateway settings.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Largest request body accepted (413 above).
    pub max_body_bytes: usize,
    /// Most distinct tokens one request may detokenize.
    pub max_tokens: usize,
    /// Largest request (body and header values) detokenization may produce; a request whose
    /// rendering could exceed it is refused (413) before any token is decrypted.
    pub max_rendered_bytes: u64,
    /// Outbound client settings.
    pub client: ClientConfig,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: crate::DEFAULT_MAX_BODY_BYTES,
            max_tokens: tessera_detokenize::DEFAULT_MAX_TOKENS,
            max_rendered_bytes: crate::DEFAULT_MAX_RENDERED_BYTES,
            client: ClientConfig::default(),
        }
    }
}

/// The gateway: vault, outbound client and metrics.
#[derive(Clone)]
pub struct Gateway {
    vault: Vault,
    client: OutboundClient,
    config: Arc<GatewayConfig>,
    metrics: Arc<Metrics>,
    transforms: Option<TransformEngine>,
    rate_limiter: Option<Arc<RateLimiter<ProxyId>>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A request that passed steps 1–3, ready to forward.
struct Prepared {
    proxy: Arc<Proxy>,
    headers: HeaderMap,
    body: Bytes,
    detokenized: usize,
}

impl Gateway {
    /// Builds the gateway (and its TLS client).
    pub fn new(
        vault: Vault,
        config: GatewayConfig,
        metrics: Arc<Metrics>,
    ) -> Result<Self, ClientBuildError> {
        Ok(Self {
            vault,
            client: OutboundClient::new(config.client.clone())?,
            config: Arc::new(config),
            metrics,
            transforms: None,
            rate_limiter: None,
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
            vault: self.vault.clone(),
            client: OutboundClient::new(self.config.client.clone())?,
            config: self.config.clone(),
            metrics: self.metrics.clone(),
            transforms: self.transforms.clone(),
            rate_limiter: self.rate_limiter.clone(),
        })
    }

    /// The request body limit adapters enforce while reading.
    pub fn max_body_bytes(&self) -> usize {
        self.config.max_body_bytes
    }

    /// The vault (for readiness checks).
    pub fn vault(&self) -> &Vault {
        &self.vault
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The 413 answer, for adapters that stop reading at the limit.
    pub fn body_too_large(&self) -> Response<ProxyBody> {
        self.metrics.record_error("too_large");
        let res = self.too_large().into_response();
        self.metrics
            .record_request("gateway", res.status().as_u16());
        res
    }

    fn too_large(&self) -> ProxyError {
        ProxyError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body exceeds the limit of {} bytes",
                self.config.max_body_bytes
            ),
        )
    }

    /// Handles one invocation. `request_id` is forwarded to the destination.
    pub async fn handle(&self, req: Request<Bytes>, request_id: &str) -> Response<ProxyBody> {
        let started = Instant::now();
        let (parts, body) = req.into_parts();
        let response = match self.prepare(&parts, body).await {
            Err(e) => {
                if e.status().is_server_error() {
                    tracing::warn!(
                        status = e.status().as_u16(),
                        detail = e.detail(),
                        "proxy error"
                    );
                }
                self.metrics.record_error(match e.status().as_u16() {
                    400 => "bad_request",
                    401 => "unauthenticated",
                    403 => "forbidden",
                    413 => "too_large",
                    429 => "rate_limited",
                    _ => "internal",
                });
                e.into_response()
            }
            Ok(prepared) => {
                let mut waited = 0.0;
                let res = self
                    .forward(&parts, prepared, request_id, &mut waited)
                    .await;
                self.metrics.observe_destination(waited);
                self.metrics
                    .observe_processing((started.elapsed().as_secs_f64() - waited).max(0.0));
                res
            }
        };
        self.metrics
            .record_request("gateway", response.status().as_u16());
        response
    }

    /// Steps 1–3: proxy, authentication, detokenization.
    async fn prepare(
        &self,
        parts: &http::request::Parts,
        body: Bytes,
    ) -> Result<Prepared, ProxyError> {
        if body.len() > self.config.max_body_bytes {
            return Err(self.too_large());
        }
        let key = forward::proxy_key(&parts.headers, parts.uri.query()).ok_or_else(|| {
            ProxyError::new(
                StatusCode::UNAUTHORIZED,
                "the SVC-PROXY-KEY header or the svc-proxy-key query parameter is required",
            )
        })?;
        let proxy =
            self.vault.proxy_by_key(&key).await?.ok_or_else(|| {
                ProxyError::new(StatusCode::UNAUTHORIZED, "the proxy key is unknown")
            })?;
        let headers = forward::request_headers(&parts.headers);
        if !proxy.require_auth {
            self.within_rate_limit(&proxy)?;
            let suffix = parts.uri.path().strip_prefix("/proxy").unwrap_or("");
            forward::check_sub_path(suffix)
                .map_err(|e| ProxyError::new(StatusCode::BAD_REQUEST, e))?;
            // Anonymous proxies forward expressions untouched: there is no caller to check.
            return Ok(Prepared {
                proxy,
                headers,
                body,
                detokenized: 0,
            });
        }
        let presented = parts
            .headers
            .get(API_KEY_HEADER)
            .map(|v| v.to_str().unwrap_or("\u{0}"));
        // The caller must be of the proxy's tenant: another tenant's key would run this
        // proxy's transforms, with its configuration, on the caller's data.
        let caller = self
            .vault
            .authenticate_in(proxy.tenant_id, presented)
            .await?;
        caller.require_somewhere(Permission::TokenUse)?;
        // Counted only once the caller is authenticated: the proxy key alone (a selector for
        // such proxies) must not let anyone use up the legitimate callers' allowance.
        self.within_rate_limit(&proxy)?;
        let suffix = parts.uri.path().strip_prefix("/proxy").unwrap_or("");
        forward::check_sub_path(suffix).map_err(|e| ProxyError::new(StatusCode::BAD_REQUEST, e))?;
        let template = RequestTemplate::prepare(
            parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())),
            &body,
        )?;
        template.check_token_count(self.config.max_tokens)?;
        if template.is_untouched() {
            return Ok(Prepared {
                proxy,
                headers,
                body,
                detokenized: 0,
            });
        }
        let values = self.fetch(&caller, &template, body.len()).await?;
        let rendered = template.render(&values)?;
        let body = rendered.body.map(Bytes::from).unwrap_or(body);
        let headers = replace_values(headers, rendered.headers)?;
        Ok(Prepared {
            proxy,
            headers,
            body,
            detokenized: values.len(),
        })
    }

    /// Takes one request from `proxy`'s rate limit, when one is configured.
    fn within_rate_limit(&self, proxy: &Proxy) -> Result<(), ProxyError> {
        let Some(limiter) = &self.rate_limiter else {
            return Ok(());
        };
        limiter.check(&proxy.id).map_err(|wait| {
            ProxyError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "this proxy is over its rate limit; retry after Retry-After seconds",
            )
            .with_retry_after(crate::rate_limit::retry_after_secs(wait))
        })
    }

    /// Fetches every referenced token in one call (the caller needs `token:use` on each),
    /// refuses a request whose rendering could exceed `--max-rendered-bytes` before anything
    /// is decrypted, then decrypts each token once into what rendering needs.
    async fn fetch(
        &self,
        caller: &Principal,
        template: &RequestTemplate,
        body_len: usize,
    ) -> Result<Values, ProxyError> {
        let sealed = self
            .vault
            .tokens_for_use(caller, template.token_ids())
            .await?;
        let sizes: HashMap<TokenId, SourceSize> = sealed
            .sizes()
            .map(|(id, s)| (id, SourceSize::rounded(s.data, s.object)))
            .collect();
        if let Some(missing) = template
            .token_ids()
            .iter()
            .find(|id| !sizes.contains_key(id))
        {
            return Err(DetokenizeError::UnknownToken(missing.to_string()).into());
        }
        template.check_bound(
            body_len,
            |id| sizes.get(&id).copied().unwrap_or(SourceSize::rounded(0, 0)),
            self.config.max_rendered_bytes,
        )?;
        Ok(sealed
            .open()?
            .into_iter()
            .map(|t| {
                let object = template
                    .needs_object(t.id)
                    .then(|| TokenView::with_data(t.clone()).to_json());
                (
                    t.id,
                    ResolvedToken {
                        data: t.data,
                        object,
                    },
                )
            })
            .collect())
    }

    /// Step 5: send to the destination and relay its answer.
    async fn forward(
        &self,
        parts: &http::request::Parts,
        prepared: Prepared,
        request_id: &str,
        waited: &mut f64,
    ) -> Response<ProxyBody> {
        let suffix = parts.uri.path().strip_prefix("/proxy").unwrap_or("");
        let joined = match prepared.proxy.parsed_destination.clone() {
            Some(mut url) => forward::destination_uri_from(&mut url, suffix, parts.uri.query()),
            None => {
                forward::destination_uri(&prepared.proxy.destination_url, suffix, parts.uri.query())
            }
        };
        let uri = match joined {
            Ok(uri) => uri,
            Err(detail) => return ProxyError::new(StatusCode::BAD_GATEWAY, detail).into_response(),
        };
        let (mut headers, mut body) = (prepared.headers, prepared.body);
        if let Some(code) = &prepared.proxy.request_transform {
            let Some(engine) = &self.transforms else {
                return no_engine();
            };
            match (transform::Runner {
                engine,
                vault: &self.vault,
                proxy: &prepared.proxy,
            })
            .request(
                code.expose(),
                &parts.method,
                suffix,
                parts.uri.query(),
                headers,
                body,
            )
            .await
            {
                Ok((h, b)) => (headers, body) = (h, b),
                Err(answer) => {
                    self.metrics.record_error("transform");
                    return *answer;
                }
            }
        }
        if let Ok(id) = HeaderValue::from_str(request_id) {
            headers.insert("x-request-id", id);
        }
        let mut out = Request::new(Full::new(body));
        *out.method_mut() = parts.method.clone();
        *out.uri_mut() = uri;
        *out.headers_mut() = headers;
        self.metrics.add_detokenized(prepared.detokenized);
        let sent = Instant::now();
        let result = self.client.send(out).await;
        *waited = sent.elapsed().as_secs_f64();
        match result {
            Ok(res) => match (
                &prepared.proxy.response_transform,
                res.status().is_success(),
            ) {
                (Some(code), true) => {
                    let Some(engine) = &self.transforms else {
                        return no_engine();
                    };
                    self.transform_response(engine, &prepared.proxy, code.expose(), res, request_id)
                        .await
                }
                _ => relay(res, request_id),
            },
            Err(SendError::Blocked) => {
                self.metrics.record_error("blocked");
                ProxyError::new(StatusCode::BAD_GATEWAY, "destination address not allowed")
                    .into_response()
            }
            Err(SendError::InsecureScheme) => {
                self.metrics.record_error("blocked");
                ProxyError::new(
                    StatusCode::BAD_GATEWAY,
                    "plain http destinations are not allowed (the gateway runs without --allow-private-destinations)",
                )
                .into_response()
            }
            Err(SendError::Timeout) => {
                self.metrics.record_error("timeout");
                tracing::warn!(proxy = %prepared.proxy.id, "destination timed out");
                ProxyError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "the destination did not answer within the destination timeout",
                )
                .into_response()
            }
            Err(SendError::Unreachable(reason)) => {
                self.metrics.record_error("unreachable");
                tracing::warn!(proxy = %prepared.proxy.id, reason, "destination unreachable");
                ProxyError::new(
                    StatusCode::BAD_GATEWAY,
                    format!("the destination could not be reached: {reason}"),
                )
                .into_response()
            }
        }
    }
}

/// Largest destination body a response transform may be given.
const MAX_TRANSFORMED_RESPONSE: usize = 10 * 1024 * 1024;

fn no_engine() -> Response<ProxyBody> {
    ProxyError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "this gateway runs without a transform engine",
    )
    .into_response()
}

impl Gateway {
    /// Buffers a 2xx response (up to 10 MiB), runs the response transform, and answers with
    /// what it returned; the status stays the destination's.
    async fn transform_response(
        &self,
        engine: &TransformEngine,
        proxy: &Proxy,
        code: &str,
        res: Response<hyper::body::Incoming>,
        request_id: &str,
    ) -> Response<ProxyBody> {
        let (parts, body) = res.into_parts();
        let body = match http_body_util::Limited::new(body, MAX_TRANSFORMED_RESPONSE)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                return ProxyError::new(
                    StatusCode::BAD_GATEWAY,
                    format!(
                    "the destination's response could not be read for the response transform: {e}"
                ),
                )
                .into_response()
            }
        };
        match (transform::Runner {
            engine,
            vault: &self.vault,
            proxy,
        })
        .response(code, parts.status, parts.headers, body)
        .await
        {
            Ok((mut headers, body)) => {
                mark_proxied(&mut headers, parts.status, request_id);
                let mut out = Response::new(Full::new(body).map_err(|e| match e {}).boxed());
                *out.status_mut() = parts.status;
                *out.headers_mut() = headers;
                out
            }
            Err(answer) => {
                self.metrics.record_error("transform");
                *answer
            }
        }
    }
}

/// Headers every proxied answer carries: the destination's status, and the request id unless
/// the answer has its own (a destination's or a transform's passes through).
fn mark_proxied(headers: &mut HeaderMap, status: StatusCode, request_id: &str) {
    headers.insert(
        DESTINATION_STATUS_HEADER,
        HeaderValue::from(status.as_u16()),
    );
    add_request_id(headers, request_id);
}

/// Sets `X-Request-Id` to `request_id` unless the answer already carries one.
pub(crate) fn add_request_id(headers: &mut HeaderMap, request_id: &str) {
    if !headers.contains_key("x-request-id") {
        if let Ok(id) = HeaderValue::from_str(request_id) {
            headers.insert("x-request-id", id);
        }
    }
}

/// `headers` with the values at the rendered positions replaced (positions count the values
/// in iteration order, as they were given to the template).
fn replace_values(
    headers: HeaderMap,
    rendered: Vec<(usize, String)>,
) -> Result<HeaderMap, ProxyError> {
    if rendered.is_empty() {
        return Ok(headers);
    }
    let mut rendered = rendered.into_iter().peekable();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (i, (name, value)) in headers.iter().enumerate() {
        match rendered.next_if(|(at, _)| *at == i) {
            Some((_, text)) => {
                let value = HeaderValue::from_str(&text).map_err(|_| {
                    ProxyError::new(
                        StatusCode::BAD_REQUEST,
                        format!("header `{name}` is not a valid value after detokenization"),
                    )
                })?;
                out.append(name.clone(), value);
            }
            None => {
                out.append(name.clone(), value.clone());
            }
        }
    }
    Ok(out)
}

/// The destination's response, streamed back with hop-by-hop headers removed and the
/// destination status added. Its own `X-Request-Id` passes through; ours is added otherwise.
fn relay(res: Response<hyper::body::Incoming>, request_id: &str) -> Response<ProxyBody> {
    let (parts, body) = res.into_parts();
    let mut headers = forward::response_headers(&parts.headers);
    mark_proxied(&mut headers, parts.status, request_id);
    let mut out = Response::new(
        body.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            .boxed(),
    );
    *out.status_mut() = parts.status;
    *out.headers_mut() = headers;
    out
}
