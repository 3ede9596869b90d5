//! `select_proxy`: the proxy named by the `SVC-PROXY-KEY` header, else the `svc-proxy-key`
//! query parameter (SUPPLEMENT §5.1, step 1). Missing or unknown: 401.

use std::sync::Arc;

use tessera_domain::proxy::Proxy;

use super::Halt;
use crate::{
    context::RequestContext,
    destination,
    error::{ErrorKind, GatewayError},
    Gateway,
};

impl Gateway {
    pub(crate) async fn select_proxy(
        &self,
        ctx: &mut RequestContext<'_>,
    ) -> Result<Arc<Proxy>, Halt> {
        let key =
            destination::proxy_key(&ctx.parts.headers, ctx.parts.uri.query()).ok_or_else(|| {
                GatewayError::new(
                    ErrorKind::Unauthenticated,
                    "the SVC-PROXY-KEY header or the svc-proxy-key query parameter is required",
                )
            })?;
        let proxy = self.vault.proxy_by_key(&key).await?.ok_or_else(|| {
            GatewayError::new(ErrorKind::Unauthenticated, "the proxy key is unknown")
        })?;
        ctx.proxy_id = Some(proxy.id);
        ctx.audit.tenant = Some(proxy.tenant_id);
        Ok(proxy)
    }

    /// Takes one request from `proxy`'s rate limit, when one is configured.
    pub(crate) fn within_rate_limit(&self, proxy: &Proxy) -> Result<(), GatewayError> {
        let Some(limiter) = &self.rate_limiter else {
            return Ok(());
        };
        limiter.check(&proxy.id).map_err(|wait| {
            GatewayError::new(
                ErrorKind::RateLimited,
                "this proxy is over its rate limit; retry after Retry-After seconds",
            )
            .with_retry_after(tessera_service::rate_limit::retry_after_secs(wait))
        })
    }
}
