//! `transform_response` (docs/api.md, "Transforms"): on a 2xx answer, the proxy's response transform, if
//! it has one: `req.args` holds the destination's body (read whole, at most 10 MiB), headers
//! and status; what it returns replaces body and headers. Any other answer is left to
//! `respond`, which relays it untouched.

use bytes::Bytes;
use http::Response;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use tessera_domain::proxy::Proxy;
use tessera_transform_runtime::Args;

use super::{Answer, Halt};
use crate::{
    context::RequestContext,
    error::{ErrorKind, GatewayError},
    headers,
    shared::Shared,
    svc::Stage,
    transform::{args_body, failed, header_pairs, replace_headers, run_transform, settle},
};

/// Largest destination body a response transform may be given.
const MAX_TRANSFORMED_RESPONSE: usize = 10 * 1024 * 1024;

pub(crate) async fn transform_response(
    gw: &Shared,
    ctx: &mut RequestContext<'_>,
    proxy: &Proxy,
    answer: Response<Incoming>,
) -> Result<Answer, Halt> {
    let code = match &proxy.response_transform {
        Some(code) if answer.status().is_success() => code,
        _ => return Ok(Answer::Destination(answer)),
    };
    let (parts, body) = answer.into_parts();
    let body = Limited::new(body, MAX_TRANSFORMED_RESPONSE)
        .collect()
        .await
        .map_err(|e| {
            GatewayError::new(
                ErrorKind::Unreachable,
                "the destination's response could not be read for the response transform",
            )
            .with_source(e)
        })?
        .to_bytes();
    let args = Args {
        body: args_body(&parts.headers, &body),
        headers: header_pairs(&parts.headers),
        method: None,
        path: None,
        query: None,
        status: Some(parts.status.as_u16()),
    };
    let outcome = run_transform(gw, ctx, (proxy, Stage::Response), code.expose(), args).await;
    let (new_body, new_headers) = settle(outcome)?;
    let mut headers = replace_headers(new_headers, parts.headers)
        .map_err(|e| failed(format!("transform failed: {e}")))?;
    let body = new_body.map_or(body, Bytes::from);
    headers::strip_response(&mut headers);
    let mut out = Response::new(Full::new(body).map_err(|e| match e {}).boxed());
    *out.status_mut() = parts.status;
    *out.headers_mut() = headers;
    Ok(Answer::Transformed(out))
}
