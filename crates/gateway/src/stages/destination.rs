//! `destination` (docs/api.md, "Proxy invocation"): where the request goes — the proxy's destination
//! URL, the sub-path after `/proxy` (dot segments refused in any spelling: they would climb out
//! of the destination's path) and the caller's query without a proxy key. The host and
//! port are the destination URL's alone (the sub-path and query are appended to its path), so
//! they are also what tokens' destination bindings are checked against.

use http::Uri;
use tessera_domain::{binding::Target, proxy::Proxy};

use super::Halt;
use crate::{
    context::RequestContext,
    destination::{check_sub_path, destination_uri},
    error::{ErrorKind, GatewayError},
};

pub(crate) fn destination(ctx: &mut RequestContext<'_>, proxy: &Proxy) -> Result<Uri, Halt> {
    let suffix = ctx.suffix();
    check_sub_path(suffix).map_err(|e| GatewayError::new(ErrorKind::BadRequest, e))?;
    let parsed = proxy.parsed_destination.as_ref().ok_or_else(|| {
        GatewayError::new(
            ErrorKind::Unreachable,
            "the proxy's destination URL is invalid",
        )
    })?;
    ctx.target = Target::of(parsed, ctx.ephemeral);
    ctx.audit.destination = ctx.target.as_ref().map(Target::display);
    ctx.audit.ephemeral = ctx.ephemeral;
    destination_uri(parsed, ctx.suffix(), &ctx.forwarded_query)
        .map_err(|e| GatewayError::new(ErrorKind::Unreachable, e.to_string()).into())
}
