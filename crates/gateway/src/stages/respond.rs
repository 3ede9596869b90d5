//! `respond`: the answer the caller gets — the destination's, relayed here (streamed,
//! hop-by-hop headers removed, `<PREFIX>-PROXY-DESTINATION-STATUS` added), a response transform's
//! (with the same status header), a transform's own answer, or a `proxy_error` — with
//! `X-Request-Id`; and the request's metrics and its one log line when the gateway failed.

use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tessera_service::mount::{BoxError, ResponseBody};

use super::{Answer, Halt};
use crate::{
    context::RequestContext,
    error::{ErrorKind, GatewayError},
    headers,
    shared::Shared,
};

pub(crate) fn respond(
    gw: &Shared,
    ctx: RequestContext<'_>,
    result: Result<Answer, Halt>,
) -> Response<ResponseBody> {
    let mut res = match result {
        Ok(Answer::Destination(answer)) => {
            let mut res = relay(answer);
            let status = res.status();
            mark_proxied(gw, &ctx, res.headers_mut(), status);
            res
        }
        Ok(Answer::Transformed(mut res)) => {
            let status = res.status();
            mark_proxied(gw, &ctx, res.headers_mut(), status);
            res
        }
        Err(Halt::Answer(mut res)) => {
            gw.metrics.error(ErrorKind::TransformFailed);
            // A transform's own answer is not the destination's: it never carries the
            // destination's status, nor a warning it could forge.
            let names = &gw.config.names;
            res.headers_mut().remove(&names.destination_status);
            res.headers_mut().remove(&names.proxy_warning);
            *res
        }
        Err(Halt::Fail(e)) => {
            gw.metrics.error(e.kind());
            log(&ctx, &e);
            e.into_response()
        }
    };
    if ctx.processed {
        let total = ctx.started.elapsed();
        gw.metrics.observe(
            total.saturating_sub(ctx.destination_wait),
            ctx.destination_wait,
        );
    }
    headers::harden_answer(res.headers_mut());
    headers::add_request_id(res.headers_mut(), ctx.request_id);
    gw.metrics.answered(res.status().as_u16());
    res
}

/// The one log line of a failed request, at its kind's level.
fn log(ctx: &RequestContext<'_>, e: &GatewayError) {
    let (status, proxy, cause) = (
        e.kind().status().as_u16(),
        ctx.proxy_id.map(|p| p.to_string()).unwrap_or_default(),
        e.source().map(|s| s.to_string()).unwrap_or_default(),
    );
    // `tracing`'s macros take their level as a constant: one line, written once, per level.
    macro_rules! proxy_error {
        ($level:ident) => {
            tracing::$level!(
                request_id = ctx.request_id,
                proxy,
                status,
                detail = e.detail(),
                cause,
                "proxy error"
            )
        };
    }
    match e.kind().log_level() {
        Some(tracing::Level::ERROR) => proxy_error!(error),
        Some(_) => proxy_error!(warn),
        None => {}
    }
}

/// Headers every proxied answer carries: the destination's status
/// (`<PREFIX>-PROXY-DESTINATION-STATUS`), `<PREFIX>-PROXY-WARNING` when the request held `{{`
/// where expressions are not looked for (a destination's own is dropped), and the request id
/// unless the answer has its own (a destination's or a transform's passes through).
fn mark_proxied(
    gw: &Shared,
    ctx: &RequestContext<'_>,
    headers: &mut HeaderMap,
    status: StatusCode,
) {
    let names = &gw.config.names;
    headers.insert(
        names.destination_status.clone(),
        HeaderValue::from(status.as_u16()),
    );
    headers.remove(&names.proxy_warning);
    if let Some(unscanned) = ctx.unscanned {
        headers.insert(
            names.proxy_warning.clone(),
            HeaderValue::from_static(unscanned.warning()),
        );
    }
    headers::add_request_id(headers, ctx.request_id);
}

/// The destination's response, streamed back with hop-by-hop headers removed
/// ([`mark_proxied`] adds Tessera's own).
fn relay(res: Response<Incoming>) -> Response<ResponseBody> {
    let (mut parts, body) = res.into_parts();
    headers::strip_response(&mut parts.headers);
    // A fresh response: the destination's HTTP version and extensions stay behind.
    let mut out = Response::new(body.map_err(|e| Box::new(e) as BoxError).boxed());
    *out.status_mut() = parts.status;
    *out.headers_mut() = parts.headers;
    out
}
