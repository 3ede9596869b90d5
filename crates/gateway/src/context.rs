//! What the stages of one request share.

use std::time::{Duration, Instant};

use tessera_domain::ProxyId;

use crate::audit::AuditNotes;

/// The per-request context the stages read and fill in.
#[derive(Debug)]
pub(crate) struct RequestContext<'a> {
    /// Method, URI, headers and version of the caller's request. Stages take what they need
    /// (the headers are moved out to become the forwarded ones).
    pub(crate) parts: http::request::Parts,
    /// The request's `X-Request-Id`.
    pub(crate) request_id: &'a str,
    /// When the gateway started on it.
    pub(crate) started: Instant,
    /// The proxy, once selected (for log lines).
    pub(crate) proxy_id: Option<ProxyId>,
    /// Set once the request is past authentication and detokenization (steps 1–3): only such
    /// requests are observed by the latency histograms.
    pub(crate) processed: bool,
    /// Time spent waiting for the destination's response headers.
    pub(crate) destination_wait: Duration,
    /// Tokens substituted into the forwarded request.
    pub(crate) detokenized: usize,
    /// What the audit trail records of the request.
    pub(crate) audit: AuditNotes,
}

impl<'a> RequestContext<'a> {
    pub(crate) fn new(parts: http::request::Parts, request_id: &'a str) -> Self {
        Self {
            parts,
            request_id,
            started: Instant::now(),
            proxy_id: None,
            processed: false,
            destination_wait: Duration::ZERO,
            detokenized: 0,
            audit: AuditNotes::default(),
        }
    }

    /// The path after `/proxy` (`""` for `/proxy` itself).
    pub(crate) fn suffix(&self) -> &str {
        self.parts.uri.path().strip_prefix("/proxy").unwrap_or("")
    }
}
