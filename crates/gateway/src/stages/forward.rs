//! `forward` (docs/api.md, "Proxy invocation"): sends the request to its destination through the
//! SSRF-guarded client, with the request's `X-Request-Id`, and takes the answer's head. An
//! answer that is not a final HTTP status is a 502 (never relayed).

use std::time::Instant;

use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use tessera_service::request_id;

use super::{Halt, Outgoing};
use crate::{
    context::RequestContext,
    error::{ErrorKind, GatewayError},
    shared::Shared,
};

pub(crate) async fn forward(
    gw: &Shared,
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
    let sent = Instant::now();
    let result = gw.client.send(out).await;
    ctx.destination_wait = sent.elapsed();
    let response = result.map_err(|e| Halt::Fail(e.into()))?;
    final_status(response.status())?;
    Ok(response)
}

/// Refuses a destination's answer whose status is not a final HTTP status: a `1xx` (hyper
/// hands `101 Switching Protocols` over as the answer) or one above 599. Relayed, a `101` made
/// `api` go on parsing the connection as HTTP while the client spoke another protocol, which
/// let a client past a front end's path rules.
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
