//! The stages of a request, one file and one function each, over the
//! [`crate::context::RequestContext`]; `lib.rs` calls them in order (its documentation draws the
//! path). Each takes the context and what the stage before it produced, and returns what the
//! next one needs.

pub(crate) mod authenticate;
pub(crate) mod destination;
pub(crate) mod detokenize;
pub(crate) mod forward;
pub(crate) mod not_quarantined;
pub(crate) mod read_body;
pub(crate) mod respond;
pub(crate) mod select_proxy;
pub(crate) mod transform_request;
pub(crate) mod transform_response;
pub(crate) mod within_rate_limit;

use bytes::Bytes;
use http::{HeaderMap, Response};
use hyper::body::Incoming;
use tessera_detokenize::DetokenizeError;
use tessera_domain::VaultError;
use tessera_service::mount::ResponseBody;

use crate::error::GatewayError;

/// What the last stage hands to `respond`.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The destination's answer, to relay as it streams.
    Destination(Response<Incoming>),
    /// A response transform's answer, complete.
    Transformed(Response<ResponseBody>),
}

/// Why a request stops before the destination's answer is relayed.
#[derive(Debug)]
pub(crate) enum Halt {
    /// The proxy failed: a `proxy_error`.
    Fail(GatewayError),
    /// A transform answered instead (`CustomHttpResponseError`). Boxed: a response is large
    /// and this path is rare.
    Answer(Box<Response<ResponseBody>>),
}

impl From<GatewayError> for Halt {
    fn from(e: GatewayError) -> Self {
        Halt::Fail(e)
    }
}

impl From<VaultError> for Halt {
    fn from(e: VaultError) -> Self {
        Halt::Fail(e.into())
    }
}

impl From<DetokenizeError> for Halt {
    fn from(e: DetokenizeError) -> Self {
        Halt::Fail(e.into())
    }
}

/// What will be sent to the destination: headers (already stripped of what must not cross)
/// and body. Both hold detokenized plaintext: `Debug` shows header names and the body's size.
pub(crate) struct Outgoing {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn outgoing_debug_shows_sizes_not_plaintext() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "authorization",
            "Bearer sk_live_secret".parse().expect("value"),
        );
        let out = super::Outgoing {
            headers,
            body: bytes::Bytes::from_static(b"{\"number\":\"4242424242424242\"}"),
        };
        let printed = format!("{out:?}");
        assert!(
            !printed.contains("secret") && !printed.contains("4242"),
            "{printed}"
        );
        assert!(printed.contains("authorization"), "{printed}");
    }
}
