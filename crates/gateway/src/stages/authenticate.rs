//! `authenticate` (SUPPLEMENT §5.1, step 2): on a `require_auth` proxy the caller's
//! `SVC-API-KEY` must be a valid key *of the proxy's tenant* (another tenant's key answers
//! exactly like an unknown one) holding `token:use` on some container. Anonymous proxies need
//! no key, and a key that is sent is ignored. The rate limit is counted here: after
//! authentication on `require_auth` proxies, so that the proxy key alone (a mere selector
//! there) cannot use up the legitimate callers' allowance.

use tessera_domain::{audit::Actor, proxy::Proxy, Permission, Principal};

use super::Halt;
use crate::{context::RequestContext, headers::API_KEY_HEADER, Gateway};

impl Gateway {
    pub(crate) async fn authenticate(
        &self,
        ctx: &mut RequestContext<'_>,
        proxy: &Proxy,
    ) -> Result<Option<Principal>, Halt> {
        if !proxy.require_auth {
            self.within_rate_limit(proxy)?;
            return Ok(None);
        }
        // A header that is not visible ASCII cannot be a key: treat it like a malformed one.
        let presented = ctx
            .parts
            .headers
            .get(API_KEY_HEADER)
            .map(|v| v.to_str().unwrap_or("\u{0}"));
        let caller = self
            .vault
            .authenticate_in(proxy.tenant_id, presented)
            .await?;
        ctx.audit.actor = Some(Actor::Application(caller.application_id()));
        caller.require_somewhere(Permission::TokenUse)?;
        self.within_rate_limit(proxy)?;
        Ok(Some(caller))
    }
}
