//! `transform_request` (docs/api.md, "Transforms"): the proxy's request transform, if it has one, on the
//! detokenized request: `req.args` holds its body, headers, method, sub-path and query (without
//! `svc-proxy-key`); what it returns replaces them. A transform that throws ends the request
//! (its error class, a custom answer, or a 500); it never reaches the destination.

use bytes::Bytes;
use tessera_domain::proxy::Proxy;
use tessera_transform_runtime::Args;

use super::{Halt, Outgoing};
use crate::{
    context::RequestContext,
    headers,
    shared::Shared,
    svc::Stage,
    transform::{args_body, failed, header_pairs, replace_headers, run_transform, settle},
};

pub(crate) async fn transform_request(
    gw: &Shared,
    ctx: &mut RequestContext<'_>,
    proxy: &Proxy,
    outgoing: Outgoing,
) -> Result<Outgoing, Halt> {
    let Some(code) = &proxy.request_transform else {
        return Ok(outgoing);
    };
    let query = match ctx.forwarded_query.as_str() {
        "" => String::new(),
        q => format!("?{q}"),
    };
    let args = Args {
        body: args_body(&outgoing.headers, &outgoing.body),
        headers: header_pairs(&outgoing.headers),
        method: Some(ctx.parts.method.as_str().to_string()),
        path: Some(ctx.suffix().to_string()),
        query: Some(query),
        status: None,
    };
    let outcome = run_transform(gw, ctx, (proxy, Stage::Request), code.expose(), args).await;
    let (new_body, new_headers) = settle(outcome)?;
    let mut headers = replace_headers(new_headers, outgoing.headers)
        .map_err(|e| failed(format!("transform failed: {e}")))?;
    let body = new_body.map_or(outgoing.body, Bytes::from);
    headers::strip_request(&mut headers, &gw.config.names);
    Ok(Outgoing { headers, body })
}
