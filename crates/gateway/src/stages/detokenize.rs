//! `detokenize` (docs/api.md, "Proxy invocation" and "Detokenization expressions"): the headers that may cross, and the body and
//! header values with every `{{ … }}` expression replaced, injection-safely for the body's type.
//! It takes the request's headers as an argument (the pipeline hands them over explicitly)
//! and counts the tokens it substituted (`tessera_tokens_detokenized_total`).
//!
//! The request is prepared once ([`RequestTemplate::prepare`]: content type classified, body
//! parsed, header values scanned); the tokens it lists are fetched in one call, still
//! encrypted; a rendering that could exceed `--max-rendered-bytes` is refused from their sizes
//! alone; then each token is decrypted once into what rendering needs. Anonymous proxies
//! forward expressions untouched: there is no caller to check.

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue};
use tessera_detokenize::{RequestTemplate, Values};
use tessera_domain::{audit::ResourceId, binding::Target, Principal, TokenId};

use super::{Halt, Outgoing};
use crate::{
    audit::record_detokenized,
    context::RequestContext,
    error::{ErrorKind, GatewayError},
    headers,
    shared::Shared,
};

/// The request's `headers` and `body` as they will be forwarded: the headers that may cross,
/// and every expression in the body and header values replaced. Anonymous proxies (no
/// `caller`) forward expressions untouched: there is no caller to check.
pub(crate) async fn detokenize(
    gw: &Shared,
    ctx: &mut RequestContext<'_>,
    caller: Option<&Principal>,
    mut headers: HeaderMap,
    body: Bytes,
) -> Result<Outgoing, Halt> {
    headers::strip_request(&mut headers, &gw.config.names);
    let Some(caller) = caller else {
        ctx.processed = true;
        return Ok(Outgoing { headers, body });
    };
    let template = RequestTemplate::prepare(
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())),
        &body,
    )?;
    template.check_token_count(gw.config.max_tokens)?;
    ctx.unscanned = template.unscanned();
    if template.is_untouched() {
        ctx.processed = true;
        return Ok(Outgoing { headers, body });
    }
    let audit_on = gw.vault.audit().is_on();
    if audit_on {
        ctx.audit.requested = uuids(template.token_ids());
    }
    let values = resolve(gw, caller, &template, body.len(), ctx.target.as_ref()).await?;
    let rendered = template.render(&values)?;
    ctx.detokenized = values.len();
    gw.metrics.detokenized(ctx.detokenized);
    if audit_on {
        let ids = std::mem::take(&mut ctx.audit.requested);
        record_detokenized(gw, &mut ctx.audit, ctx.proxy_id, ctx.request_id, ids).await?;
    }
    ctx.processed = true;
    Ok(Outgoing {
        body: rendered.body.map(Bytes::from).unwrap_or(body),
        headers: replace_values(headers, rendered.headers)?,
    })
}

/// Fetches every referenced token in one call (the caller needs `token:use` on each),
/// refuses a request with a token whose destination binding does not allow `target`
/// and one whose rendering could exceed `--max-rendered-bytes`, both before
/// anything is decrypted, then decrypts each token once into what rendering needs.
async fn resolve(
    gw: &Shared,
    caller: &Principal,
    template: &RequestTemplate,
    body_len: usize,
    target: Option<&Target>,
) -> Result<Values, Halt> {
    let sealed = gw
        .vault
        .tokens_for_use(caller, template.token_ids())
        .await?;
    let target = target.ok_or_else(|| {
        GatewayError::new(
            ErrorKind::Internal,
            "no destination known before detokenizing",
        )
    })?;
    sealed.check_target(target, gw.config.ephemeral_unbound_tokens)?;
    template.check_found(body_len, sealed.sizes(), gw.config.max_rendered_bytes)?;
    Ok(template.values(sealed.open()?))
}

fn uuids(ids: &std::collections::BTreeSet<TokenId>) -> Vec<ResourceId> {
    ids.iter().map(ResourceId::from).collect()
}

/// `headers` with the values at the rendered positions replaced (positions count the values
/// in iteration order, as they were given to the template).
fn replace_values(
    headers: HeaderMap,
    rendered: Vec<(usize, String)>,
) -> Result<HeaderMap, GatewayError> {
    if rendered.is_empty() {
        return Ok(headers);
    }
    let mut rendered = rendered.into_iter().peekable();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (i, (name, value)) in headers.iter().enumerate() {
        match rendered.next_if(|(at, _)| *at == i) {
            Some((_, text)) => {
                let value = HeaderValue::from_str(&text).map_err(|_| {
                    GatewayError::new(
                        ErrorKind::BadRequest,
                        format!("header `{name}` is not a valid value after detokenization"),
                    )
                })?;
                out.append(name.clone(), value);
            }
            None => {
                out.append(name.clone(), value.clone());
            }
        }
    }
    Ok(out)
}
