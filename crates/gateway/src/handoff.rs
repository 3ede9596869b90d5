//! What the stages hand each other and `respond`: the request as it will be forwarded
//! ([`Outgoing`]), the answer to relay ([`Answer`]), and why a request stops early ([`Halt`]).
//! Below the stages, so that the transform runner and the audit trail can name them too.

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
