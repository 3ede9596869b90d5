//! What the stages of one request share.

use std::time::{Duration, Instant};

use tessera_domain::ProxyId;

use crate::audit::AuditNotes;

/// The per-request context the stages read and fill in. The caller's headers hold its
/// `SVC-API-KEY` and `SVC-PROXY-KEY`: `Debug` shows method, path and header names only.
pub(crate) struct RequestContext<'a> {
    /// Method, URI, headers and version of the caller's request. The headers are handed to
    /// `detokenize` by the pipeline ([`RequestContext::take_headers`]) once the stages before
    /// it (which read the keys in them) are done.
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
    /// An ephemeral proxy's request.
    pub(crate) ephemeral: bool,
    /// Where the request goes, once known: what tokens' destination bindings are checked
    /// against.
    pub(crate) target: Option<tessera_domain::binding::Target>,
    /// Where the request's body held `{{` that was not looked at: said in
    /// `<PREFIX>-PROXY-WARNING` on the answer.
    pub(crate) unscanned: Option<tessera_detokenize::Unscanned>,
    /// The proxy key the caller presented (the header, else the query), read once.
    pub(crate) proxy_key: Option<String>,
    /// The caller's query without any proxy key: what the destination and a request transform
    /// see.
    pub(crate) forwarded_query: String,
}

impl std::fmt::Debug for RequestContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("method", &self.parts.method)
            .field("path", &self.parts.uri.path())
            .field("headers", &self.parts.headers.keys().collect::<Vec<_>>())
            .field("request_id", &self.request_id)
            .field("proxy_id", &self.proxy_id)
            .finish_non_exhaustive()
    }
}

impl<'a> RequestContext<'a> {
    /// The context of a request whose proxy key and query are read with `names`.
    pub(crate) fn new(
        parts: http::request::Parts,
        request_id: &'a str,
        names: &tessera_service::header_names::HeaderNames,
    ) -> Self {
        let query = parts.uri.query();
        let proxy_key = crate::destination::proxy_key(&parts.headers, query, names);
        let forwarded_query = query
            .map(|q| crate::destination::strip_proxy_key(q, names))
            .unwrap_or_default();
        Self {
            proxy_key,
            forwarded_query,
            parts,
            request_id,
            started: Instant::now(),
            proxy_id: None,
            processed: false,
            destination_wait: Duration::ZERO,
            detokenized: 0,
            audit: AuditNotes::default(),
            ephemeral: false,
            target: None,
            unscanned: None,
        }
    }

    /// Hands the caller's headers over (to `detokenize`, which turns them into the forwarded
    /// ones); the context keeps none from then on. The pipeline in `lib.rs` calls it, so that
    /// no stage empties a field behind another's back.
    pub(crate) fn take_headers(&mut self) -> http::HeaderMap {
        std::mem::take(&mut self.parts.headers)
    }

    /// The path after `/proxy` (`""` for `/proxy` itself).
    pub(crate) fn suffix(&self) -> &str {
        self.parts.uri.path().strip_prefix("/proxy").unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn debug_names_headers_without_their_values() {
        let (parts, ()) = http::Request::post("/proxy/x?svc-proxy-key=pk_query_secret")
            .header("svc-api-key", "key_api_secret")
            .header("svc-proxy-key", "pk_header_secret")
            .body(())
            .expect("request")
            .into_parts();
        let printed = format!(
            "{:?}",
            super::RequestContext::new(
                parts,
                "req-1",
                &tessera_service::header_names::HeaderNames::default(),
            )
        );
        assert!(!printed.contains("secret"), "{printed}");
        assert!(
            printed.contains("svc-api-key") && printed.contains("/proxy/x"),
            "{printed}"
        );
    }
}
