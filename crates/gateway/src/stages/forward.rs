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
    pub(crate) fn destination(
        &self,
        ctx: &mut RequestContext<'_>,
        proxy: &Proxy,
    ) -> Result<Uri, Halt> {
        let suffix = ctx.suffix();
        destination::check_sub_path(suffix)
            .map_err(|e| GatewayError::new(ErrorKind::BadRequest, e))?;
        let parsed = proxy.parsed_destination.as_ref().ok_or_else(|| {
            GatewayError::new(
                ErrorKind::Unreachable,
                "the proxy's destination URL is invalid",
            )
        })?;
        // The host and port the request goes to are the destination URL's: the sub-path and
        // query are appended to its path and cannot change them.
        ctx.target = tessera_domain::binding::Target::of(parsed, ctx.ephemeral);
        ctx.audit.destination = ctx.target.as_ref().map(|t| t.display());
        ctx.audit.ephemeral = ctx.ephemeral;
        let suffix = ctx.suffix();
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
        let response = result.map_err(|e| Halt::Fail(e.into()))?;
        final_status(response.status())?;
        Ok(response)
    }
}

/// Refuses a destination's answer whose status is not a final HTTP status: a `1xx` (hyper
/// hands `101 Switching Protocols` over as the answer) or one above 599. Relayed, a `101` made
/// `api` go on parsing the connection as HTTP while the client spoke another protocol, which
/// let a client past a front end's path rules (attack finding 6).
fn final_status(status: http::StatusCode) -> Result<(), GatewayError> {
    if status.is_informational() || status.as_u16() > 599 {
        return Err(GatewayError::new(
            ErrorKind::Unreachable,
            format!(
                "the destination answered with status {}, which is not a final HTTP status; nothing was relayed",
                status.as_u16()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    #[test]
    fn only_final_statuses_are_relayed() {
        for code in [100, 101, 103, 199, 600, 999] {
            let status = StatusCode::from_u16(code).expect("status");
            assert!(super::final_status(status).is_err(), "{code}");
        }
        for code in [200, 204, 301, 404, 500, 599] {
            let status = StatusCode::from_u16(code).expect("status");
            assert!(super::final_status(status).is_ok(), "{code}");
        }
    }
}
