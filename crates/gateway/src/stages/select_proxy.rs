//! `select_proxy` (docs/api.md, "Proxy invocation" and "Ephemeral proxy"): which proxy the request invokes — the one
//! whose key is in the `<PREFIX>-PROXY-KEY` header (`SVC-PROXY-KEY` by default), else the
//! `<prefix>-proxy-key` query parameter (missing or unknown: 401), or, with `<PREFIX>-PROXY-URL`
//! instead of a key, an ephemeral proxy to
//! that URL. An ephemeral request naming a proxy key too, one made while ephemeral
//! proxies are off (`--no-ephemeral-proxy`), and one whose URL is not an allowed destination
//! (`https`, or `http` and private addresses with `--allow-private-destinations`) are 400s.

use std::sync::Arc;

use tessera_domain::proxy::{check_destination, DestinationPolicy, Proxy};

use super::Halt;
use crate::{
    context::RequestContext,
    error::{ErrorKind, GatewayError},
    shared::Shared,
};

/// The proxy a request invokes.
#[derive(Debug)]
pub(crate) enum Selected {
    /// A stored proxy, found by its key.
    Configured(Arc<Proxy>),
    /// An ephemeral proxy to this URL; it belongs to the caller's tenant, known once the
    /// caller is.
    Ephemeral(url::Url),
}

pub(crate) async fn select_proxy(
    gw: &Shared,
    ctx: &mut RequestContext<'_>,
) -> Result<Selected, Halt> {
    if let Some(url) = ephemeral_url(gw, ctx)? {
        ctx.ephemeral = true;
        return Ok(Selected::Ephemeral(url));
    }
    let names = &gw.config.names;
    let key = ctx.proxy_key.as_deref().ok_or_else(|| {
        GatewayError::new(
            ErrorKind::Unauthenticated,
            format!(
                "the {}-PROXY-KEY header or the {} query parameter is required",
                names.prefix(),
                names.proxy_key_query
            ),
        )
    })?;
    let proxy =
        gw.vault.proxy_by_key(key).await?.ok_or_else(|| {
            GatewayError::new(ErrorKind::Unauthenticated, "the proxy key is unknown")
        })?;
    ctx.proxy_id = Some(proxy.id);
    ctx.audit.tenant = Some(proxy.tenant_id);
    Ok(Selected::Configured(proxy))
}

/// The URL of an ephemeral invocation, when the request is one (`SVC-PROXY-URL` given).
fn ephemeral_url(gw: &Shared, ctx: &RequestContext<'_>) -> Result<Option<url::Url>, Halt> {
    let names = &gw.config.names;
    let Some(raw) = ctx.parts.headers.get(&names.proxy_url) else {
        return Ok(None);
    };
    let header = format!("{}-PROXY-URL", names.prefix());
    let bad = |message: String| Halt::from(GatewayError::new(ErrorKind::BadRequest, message));
    if !gw.config.ephemeral_proxy {
        return Err(bad("ephemeral proxies are disabled".into()));
    }
    if ctx.proxy_key.is_some() {
        return Err(bad(format!(
            "{header} (an ephemeral proxy) and a proxy key cannot be used together"
        )));
    }
    let raw = raw
        .to_str()
        .map_err(|_| bad(format!("{header} must be visible ASCII")))?;
    let policy = DestinationPolicy {
        allow_private_destinations: gw.config.client.allow_private_destinations,
    };
    check_destination(raw, policy)
        .map(Some)
        .map_err(|e| bad(format!("{header} {e}")))
}
