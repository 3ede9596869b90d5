//! `ephemeral` (issue 27, SUPPLEMENT §10): `/proxy[/sub/path]` with `SVC-PROXY-URL: <absolute
//! URL>` and no proxy key is an ephemeral proxy — one the caller names instead of one an
//! administrator configured. It is always authenticated (`SVC-API-KEY` of any tenant, with
//! `token:use` on some container, 401/403) and never runs transforms. Because the caller
//! chooses where the request goes, it detokenizes only tokens bound to destinations, and each
//! only to a host its binding allows (see `detokenize`); `--ephemeral-unbound-tokens` lets
//! unbound ones through (unsafe). The URL must be an allowed destination (`https`, or `http`
//! and private addresses with `--allow-private-destinations`), and the SSRF guard checks the
//! addresses dialled as for any proxy. `SVC-PROXY-URL` is not forwarded (no `SVC-*` header
//! is). `--no-ephemeral-proxy` turns it off (400).

use std::sync::Arc;

use tessera_domain::{
    audit::Actor,
    proxy::{check_destination, DestinationPolicy, Proxy},
    Permission, Principal,
};

use super::Halt;
use crate::{
    context::RequestContext,
    destination,
    error::{ErrorKind, GatewayError},
    headers::{API_KEY_HEADER, PROXY_URL_HEADER},
    Gateway,
};

impl Gateway {
    /// The URL of an ephemeral invocation, when the request is one (`SVC-PROXY-URL` given):
    /// 400 when it also names a proxy key, when ephemeral proxies are off, or when the URL is
    /// not an allowed destination.
    pub(crate) fn ephemeral_url(&self, ctx: &RequestContext<'_>) -> Result<Option<url::Url>, Halt> {
        let Some(raw) = ctx.parts.headers.get(PROXY_URL_HEADER) else {
            return Ok(None);
        };
        let bad = |message: String| Halt::from(GatewayError::new(ErrorKind::BadRequest, message));
        if !self.config.ephemeral_proxy {
            return Err(bad("ephemeral proxies are disabled".into()));
        }
        if destination::proxy_key(&ctx.parts.headers, ctx.parts.uri.query()).is_some() {
            return Err(bad(
                "SVC-PROXY-URL (an ephemeral proxy) and a proxy key cannot be used together".into(),
            ));
        }
        let raw = raw
            .to_str()
            .map_err(|_| bad("SVC-PROXY-URL must be visible ASCII".into()))?;
        let policy = DestinationPolicy {
            allow_private_destinations: self.config.client.allow_private_destinations,
        };
        check_destination(raw, policy)
            .map(Some)
            .map_err(|e| bad(format!("SVC-PROXY-URL {e}")))
    }

    /// Authenticates an ephemeral invocation's caller (a key of any tenant, holding
    /// `token:use` somewhere) and builds the proxy it stands for, in the caller's tenant.
    pub(crate) async fn authenticate_ephemeral(
        &self,
        ctx: &mut RequestContext<'_>,
        url: url::Url,
    ) -> Result<(Arc<Proxy>, Principal), Halt> {
        ctx.ephemeral = true;
        let presented = ctx
            .parts
            .headers
            .get(API_KEY_HEADER)
            .map(|v| v.to_str().unwrap_or("\u{0}"));
        let caller = self.vault.authenticate(presented).await?;
        ctx.audit.tenant = Some(caller.tenant_id());
        ctx.audit.actor = Some(Actor::Application(caller.application_id()));
        caller.require_somewhere(Permission::TokenUse)?;
        let proxy = Arc::new(Proxy::ephemeral(&caller, url));
        self.within_rate_limit(&proxy)?;
        Ok((proxy, caller))
    }
}
