//! How the management server mounts the gateway at `/proxy` while neither crate depends on the
//! other: `tessera-http` takes any [`ProxyHandler`], `tessera-gateway` implements it, and the
//! `api` binary, which knows both, hands one to the other.

use std::{future::Future, pin::Pin};

use bytes::Bytes;
use http::{Request, Response};

/// Errors of bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body the handler reads at its own pace, after it has checked the credentials
/// (actix's payload is not `Send`, so neither is this).
pub type LocalBody = Pin<Box<dyn http_body::Body<Data = Bytes, Error = BoxError>>>;

/// A response body: buffered (errors, transformed answers) or streamed from the destination.
pub type ResponseBody = http_body_util::combinators::BoxBody<Bytes, BoxError>;

/// The answer of one invocation, produced on the thread serving the request.
pub type Handled<'a> = Pin<Box<dyn Future<Output = Response<ResponseBody>> + 'a>>;

/// Serves `/proxy` and `/proxy/…` (docs/api.md, "Proxy invocation").
pub trait ProxyHandler: Send + Sync {
    /// Handles one invocation; `request_id` is the request's `X-Request-Id`.
    fn handle<'a>(&'a self, req: Request<LocalBody>, request_id: &'a str) -> Handled<'a>;
}

/// Whether `path` is proxy invocation (`/proxy` or under `/proxy/`): the destination's business,
/// left exactly as sent, whichever server mounts the gateway.
pub fn is_proxy_path(path: &str) -> bool {
    path == "/proxy" || path.starts_with("/proxy/")
}
