//! `destination` and `forward` (SUPPLEMENT §5.1, step 4): where the request goes — the
//! proxy's destination URL, the sub-path after `/proxy` (dot segments refused: they would climb
//! out of the destination's path) and the caller's query without `svc-proxy-key` — and sending
//! it there through the SSRF-guarded client, with the request's `X-Request-Id`.

use std::time::Instant;

use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use tessera_domain::proxy::Proxy;
use tessera_service::request_id;

use super::{Halt, Outgoing};
use crate::{
    context::RequestContext,
    destination,
    error::{ErrorKind, GatewayError},
    Gateway,
};

impl Gateway {
    pub(crate) fn destination(&self, ctx: &RequestContext<'_>, proxy: &Proxy) -> Result<Uri, Halt> {
        let suffix = ctx.suffix();
        destination::check_sub_path(suffix)
            .map_err(|e| GatewayError::new(ErrorKind::BadRequest, e))?;
        let parsed = proxy.parsed_destination.as_ref().ok_or_else(|| {
            GatewayError::new(
                ErrorKind::Unreachable,
                "the proxy's destination URL is invalid",
            )
        })?;
        destination::destination_uri(parsed, suffix, ctx.parts.uri.query())
            .map_err(|e| GatewayError::new(ErrorKind::Unreachable, e).into())
    }

    pub(crate) async fn forward(
        &self,
        ctx: &mut RequestContext<'_>,
        uri: Uri,
        outgoing: Outgoing,
    ) -> Result<Response<Incoming>, Halt> {
        let Outgoing { mut headers, body } = outgoing;
        if let Ok(id) = HeaderValue::from_str(ctx.request_id) {
            headers.insert(request_id::HEADER, id);
        }
        let mut out = Request::new(Full::new(body));
        *out.method_mut() = ctx.parts.method.clone();
        *out.uri_mut() = uri;
        *out.headers_mut() = headers;
        self.metrics.detokenized(ctx.detokenized);
        let sent = Instant::now();
        let result = self.client.send(out).await;
        ctx.destination_wait = sent.elapsed();
        result.map_err(|e| Halt::Fail(e.into()))
    }
}
