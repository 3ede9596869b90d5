//! How a delivery leaves the process: a port, so that this crate holds no HTTP client. The
//! binaries give it the gateway's outbound client, whose SSRF guard checks every address at
//! connect time, as for proxies (docs/webhooks.md, "Where events may go").

use async_trait::async_trait;

/// One POST to a receiver.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The receiver's URL.
    pub url: String,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body (stable JSON).
    pub body: Vec<u8>,
}

/// Why a POST got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendFailure {
    /// The SSRF guard refused the address (or the scheme).
    #[error("the receiver's address is not allowed")]
    Blocked,
    /// No answer within the attempt's time.
    #[error("the receiver did not answer in time")]
    Timeout,
    /// The connection failed (refused, reset, TLS).
    #[error("the receiver could not be reached")]
    Unreachable,
    /// The request could not be made (a URL the client refuses).
    #[error("the request could not be made")]
    Invalid,
}

/// Sends one POST and reports the answer's status. The answer's body is never read: a huge
/// or slow body costs the deliverer nothing, and redirects are not followed (a 3xx is a
/// failure).
#[async_trait]
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// POSTs `request`; the status of the answer.
    async fn post(&self, request: Outgoing) -> Result<u16, SendFailure>;
}
