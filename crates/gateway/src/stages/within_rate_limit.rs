//! `within_rate_limit` (`--rate-limit`): takes one request from the proxy's allowance, 429
//! with `Retry-After` above it. It runs after authentication, so that on `require_auth`
//! proxies the proxy key alone (a mere selector there) cannot use up the legitimate callers'
//! allowance; an ephemeral proxy's allowance is its caller's application's.

use tessera_domain::proxy::Proxy;

use super::Halt;
use crate::{
    error::{ErrorKind, GatewayError},
    shared::Shared,
};

pub(crate) fn within_rate_limit(gw: &Shared, proxy: &Proxy) -> Result<(), Halt> {
    let Some(limiter) = &gw.rate_limiter else {
        return Ok(());
    };
    limiter.check(&proxy.id).map_err(|wait| {
        GatewayError::new(
            ErrorKind::RateLimited,
            "this proxy is over its rate limit; retry after Retry-After seconds",
        )
        .with_retry_after(tessera_service::rate_limit::retry_after_secs(wait))
        .into()
    })
}
