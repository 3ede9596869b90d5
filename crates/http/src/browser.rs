//! Calls from web pages: CORS on `POST /tokens` and `POST /tokenize`, and what a `public` key
//! may do from a browser (docs/api.md, "Browsers and CORS").
//!
//! The CORS protocol itself (preflights, `Vary`, header checks) is `actix-cors`'s. What it
//! cannot know is who the caller is: a preflight carries no key, and the real request's key is
//! read only by [`crate::auth`]. So:
//!
//! 1. [`cors`] answers every preflight for `POST` from any origin, the same way whatever the
//!    origin: a preflight never tells anyone which origins a tenant allows;
//! 2. [`admit`], run by the authentication middleware once the key is known, refuses a
//!    `public` key sent from a page whose origin its application does not list (403), applies
//!    the public keys' own rate limit, and marks the request when its answer may be shared;
//! 3. [`share_only_if_admitted`], outermost, removes every `Access-Control-*` header from a
//!    real answer that was not marked: another key type, another origin, another endpoint.
//!
//! Credentials are never allowed (no `Access-Control-Allow-Credentials`), and `*` is never
//! sent.

use std::net::IpAddr;

use actix_cors::Cors;
use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::{header, Method, StatusCode},
    middleware::Next,
    Error, HttpMessage, HttpRequest,
};
use tessera_domain::{origin::Origin, ApplicationId, ApplicationType, Principal};
pub use tessera_service::rate_limit::RateLimit;
use tessera_service::{
    client_address::counted_client,
    header_names::HeaderNames,
    rate_limit::{retry_after_secs, RateLimiter},
};

use crate::problem::ApiError;

/// How long a browser may keep a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE: usize = 600;

/// Default limit of each public key per client address: 5 creates a second, 50 at once. A
/// checkout makes one or two; a card-testing run makes thousands.
pub const DEFAULT_PUBLIC_RATE_LIMIT: RateLimit = RateLimit {
    per_second: 5.0,
    burst: 50.0,
};

/// What the API knows about browsers.
#[derive(Debug)]
pub struct Browsers {
    /// The hosted card fields' own origin: allowed for every public key, so the frame can
    /// call the API when the two are served apart.
    pub elements_origin: Option<Origin>,
    /// The public keys' own limit, per application and client address.
    limiter: RateLimiter<(ApplicationId, IpAddr)>,
    /// Reverse proxies whose `X-Forwarded-For` names the client.
    trusted_proxies: Vec<IpAddr>,
}

impl Browsers {
    /// Browsers served by the hosted fields at `elements_origin` (if any), with public keys
    /// limited to `limit`.
    pub fn new(elements_origin: Option<Origin>, limit: RateLimit) -> Self {
        Self {
            elements_origin,
            limiter: RateLimiter::new(limit),
            trusted_proxies: Vec::new(),
        }
    }

    /// Believes `X-Forwarded-For` from `proxies` (the load balancers in front of the API), so
    /// that the public keys' limit counts each client, not the balancer.
    pub fn with_trusted_proxies(mut self, proxies: Vec<IpAddr>) -> Self {
        self.trusted_proxies = proxies;
        self
    }

    /// The client a request comes from, as the limit counts it: the peer, or behind trusted
    /// proxies the last address of `X-Forwarded-For` that is not one of them, counted by
    /// `counted_as` (an IPv4 client alone, also when it arrives IPv4-mapped; a native IPv6
    /// client by its /64).
    fn client(&self, req: &ServiceRequest) -> Option<IpAddr> {
        let forwarded = req
            .headers()
            .get_all("x-forwarded-for")
            .filter_map(|v| v.to_str().ok());
        Some(counted_client(
            req.peer_addr()?.ip(),
            forwarded,
            &self.trusted_proxies,
        ))
    }
}

impl Default for Browsers {
    fn default() -> Self {
        Self::new(None, DEFAULT_PUBLIC_RATE_LIMIT)
    }
}

/// Marks a request whose answer a browser on its `Origin` may read.
#[derive(Debug, Clone, Copy)]
struct Admitted;

/// Marks a request made with a `public` key: the bucket of its limit, which a create spends
/// one unit of per token ([`spend_for_tokens`]).
#[derive(Debug, Clone, Copy)]
struct PublicCaller(ApplicationId, IpAddr);

/// The CORS middleware of the two browser endpoints: preflights for `POST` from any origin,
/// with the headers a create sends. Whether a real answer is shared is decided later (see the
/// module's documentation).
pub(crate) fn cors(names: &HeaderNames) -> Cors {
    Cors::default()
        .allowed_origin_fn(|_, _| true)
        .block_on_origin_mismatch(false)
        .allowed_methods([Method::POST])
        .allowed_headers([
            header::CONTENT_TYPE.as_str(),
            names.api_key.as_str(),
            names.idempotency_key.as_str(),
            "idempotency-key",
            names.trace_id.as_str(),
        ])
        .expose_headers(["x-request-id"])
        .max_age(PREFLIGHT_MAX_AGE)
}

/// Refuses what a browser's call with `principal`'s key may not do, and marks the request
/// when its answer may be shared with the page. Only `public` keys are affected: other keys
/// are never shared with a page, whatever they do.
pub(crate) fn admit(
    browsers: &Browsers,
    req: &ServiceRequest,
    principal: &Principal,
) -> Result<(), ApiError> {
    if principal.app_type() != ApplicationType::Public {
        return Ok(());
    }
    // The origin first: a page that may not use the key spends none of its limit.
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let elements = browsers.elements_origin.as_ref();
        if !(principal.allows_browser_origin(origin)
            || elements.is_some_and(|o| o.as_str() == origin))
        {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "this public application's allowed_origins do not list the page's origin",
            ));
        }
        // From here the page may read the answer, a 429 included.
        if req.method() == Method::POST {
            req.extensions_mut().insert(Admitted);
        }
    }
    if let Some(client) = browsers.client(req) {
        // Every request spends one unit; a create spends one more per further token.
        let bucket = (principal.application_id(), client);
        if let Err(wait) = browsers.limiter.check(&bucket) {
            return Err(ApiError::rate_limited(retry_after_secs(wait)));
        }
        req.extensions_mut()
            .insert(PublicCaller(bucket.0, bucket.1));
    }
    Ok(())
}

/// Spends the public keys' limit on a create of `count` tokens: one unit per token, the
/// first of which the request spent when it was admitted. A call with another key spends
/// nothing. Above the burst the request can never pass: a 400 naming the limit, not a 429
/// (docs/api.md, "Browsers and CORS").
pub(crate) fn spend_for_tokens(
    browsers: &Browsers,
    req: &HttpRequest,
    count: usize,
) -> Result<(), ApiError> {
    let Some(PublicCaller(app, client)) = req.extensions().get::<PublicCaller>().copied() else {
        return Ok(());
    };
    let burst = browsers.limiter.limit().burst;
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    if f64::from(count) > burst {
        return Err(ApiError::field(
            "body",
            format!(
                "holds {count} tokens; a public key creates at most {burst} in one request \
                 (the public keys' burst, --public-rate-limit-burst)"
            ),
        ));
    }
    browsers
        .limiter
        .check_units(&(app, client), count.saturating_sub(1))
        .map_err(|wait| ApiError::rate_limited(retry_after_secs(wait)))
}

/// Outermost on the browser endpoints: a real answer keeps its `Access-Control-*` headers
/// only when [`admit`] marked its request. Preflights pass untouched.
pub(crate) async fn share_only_if_admitted(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let preflight = req.method() == Method::OPTIONS;
    let mut res = next.call(req).await?;
    if !preflight && res.request().extensions().get::<Admitted>().is_none() {
        let cors: Vec<_> = res
            .headers()
            .keys()
            .filter(|name| name.as_str().starts_with("access-control-"))
            .cloned()
            .collect();
        for name in cors {
            res.headers_mut().remove(name);
        }
    }
    Ok(res)
}
