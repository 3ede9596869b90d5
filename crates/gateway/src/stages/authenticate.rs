//! `authenticate` (SUPPLEMENT §5.1 step 2, §10): who calls.
//!
//! - A `require_auth` proxy needs a `SVC-API-KEY` *of the proxy's tenant* (another tenant's key
//!   answers exactly like an unknown one: 401) holding `token:use` on some container (403).
//! - An anonymous proxy needs no key, and a key that is sent is ignored.
//! - An ephemeral proxy (issue 27) needs a key of any tenant holding `token:use` somewhere; the
//!   proxy it stands for is the caller's, in the caller's tenant, with no key, transforms or
//!   application.

use std::sync::Arc;

use tessera_domain::{audit::Actor, proxy::Proxy, Permission, Principal, TenantId};

use super::{select_proxy::Selected, Halt};
use crate::{context::RequestContext, headers::API_KEY_HEADER, Gateway};

/// The proxy invoked and its authenticated caller (`None`: an anonymous proxy).
pub(crate) async fn authenticate(
    gw: &Gateway,
    ctx: &mut RequestContext<'_>,
    selected: Selected,
) -> Result<(Arc<Proxy>, Option<Principal>), Halt> {
    match selected {
        Selected::Configured(proxy) if !proxy.require_auth => Ok((proxy, None)),
        Selected::Configured(proxy) => {
            let caller = caller(gw, ctx, Some(proxy.tenant_id)).await?;
            Ok((proxy, Some(caller)))
        }
        Selected::Ephemeral(url) => {
            let caller = caller(gw, ctx, None).await?;
            Ok((Arc::new(Proxy::ephemeral(&caller, url)), Some(caller)))
        }
    }
}

/// The caller of the request's `SVC-API-KEY` — of `tenant` when given — holding `token:use`
/// somewhere.
async fn caller(
    gw: &Gateway,
    ctx: &mut RequestContext<'_>,
    tenant: Option<TenantId>,
) -> Result<Principal, Halt> {
    // A header that is not visible ASCII cannot be a key: treat it like a malformed one.
    let presented = ctx
        .parts
        .headers
        .get(API_KEY_HEADER)
        .map(|v| v.to_str().unwrap_or("\u{0}"));
    let caller = match tenant {
        Some(tenant) => gw.vault.authenticate_in(tenant, presented).await?,
        None => gw.vault.authenticate(presented).await?,
    };
    ctx.audit.tenant = Some(caller.tenant_id());
    ctx.audit.actor = Some(Actor::Application(caller.application_id()));
    caller.require_somewhere(Permission::TokenUse)?;
    Ok(caller)
}
