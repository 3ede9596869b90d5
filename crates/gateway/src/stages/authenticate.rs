//! `authenticate` (docs/api.md, "Proxy invocation" and "Ephemeral proxy"): who calls.
//!
//! - A `require_auth` proxy needs a `SVC-API-KEY` *of the proxy's tenant* (another tenant's key
//!   answers exactly like an unknown one: 401) holding `token:use` on some container (403).
//! - An anonymous proxy needs no key, and a key that is sent is ignored (it is looked up, since
//!   the lookup starts before the proxy is known, but its answer is not used).
//! - An ephemeral proxy needs a key of any tenant holding `token:use` somewhere; the
//!   proxy it stands for is the caller's, in the caller's tenant, with no key, transforms or
//!   application.

use std::sync::Arc;

use http::HeaderValue;
use tessera_domain::{audit::Actor, proxy::Proxy, Permission, Principal, Vault};

use super::{select_proxy::Selected, Halt};
use crate::{context::RequestContext, shared::Shared};

/// The request's `<PREFIX>-API-KEY`, looked up by [`look_up_key`] while `select_proxy` finds the
/// proxy: on a cold request the two lookups overlap instead of following each
/// other. Kept until the proxy is known; an anonymous proxy ignores it.
pub(crate) type LookedUp = Result<Principal, tessera_domain::VaultError>;

/// The key the request presents, taken out of the context (a reference-counted handle, not a
/// copy) so that its lookup can run beside `select_proxy`, which needs the context mutably.
pub(crate) fn presented_key(gw: &Shared, ctx: &RequestContext<'_>) -> Option<HeaderValue> {
    ctx.parts.headers.get(&gw.config.names.api_key).cloned()
}

/// Looks `key` up in whatever tenant (cached by the vault). A header that is not visible
/// ASCII cannot be a key: it is looked up as a malformed one.
pub(crate) async fn look_up_key(gw: &Shared, key: Option<&HeaderValue>) -> LookedUp {
    let presented = key.map(|v| v.to_str().unwrap_or("\u{0}"));
    gw.vault.authenticate(presented).await
}

/// The proxy invoked and its authenticated caller (`None`: an anonymous proxy).
pub(crate) fn authenticate(
    ctx: &mut RequestContext<'_>,
    selected: Selected,
    looked_up: LookedUp,
) -> Result<(Arc<Proxy>, Option<Principal>), Halt> {
    match selected {
        Selected::Configured(proxy) if !proxy.require_auth => Ok((proxy, None)),
        Selected::Configured(proxy) => {
            let caller = caller(ctx, Vault::confine(looked_up, proxy.tenant_id))?;
            Ok((proxy, Some(caller)))
        }
        Selected::Ephemeral(url) => {
            let caller = caller(ctx, looked_up)?;
            Ok((Arc::new(Proxy::ephemeral(&caller, url)), Some(caller)))
        }
    }
}

/// The caller, holding `token:use` somewhere, recorded in the context's audit facts.
fn caller(ctx: &mut RequestContext<'_>, authenticated: LookedUp) -> Result<Principal, Halt> {
    let caller = authenticated?;
    ctx.audit.tenant = Some(caller.tenant_id());
    ctx.audit.actor = Some(Actor::Application(caller.application_id()));
    caller.require_somewhere(Permission::TokenUse)?;
    Ok(caller)
}
