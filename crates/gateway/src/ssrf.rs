//! The SSRF guard: a proxy makes the server open connections to URLs its tenants chose, so
//! the gateway must not become a way into the network it runs in (see
//! `docs/architecture.md#the-ssrf-guard`).
//!
//! * [`GuardedResolver`] resolves with the system resolver and refuses a name if *any* of its
//!   addresses is internal; the addresses it lets through are exactly the ones hyper dials, so
//!   DNS rebinding between a check and the connect is impossible.
//! * [`check_literal`] covers IP literals, which never reach a resolver, and plain `http`.

use std::{
    future::Future,
    io,
    net::SocketAddr,
    pin::Pin,
    task::{Context, Poll},
};

use http::Uri;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use tessera_domain::network;
use tower_service::Service;

use crate::send_error::SendError;

/// Marker carried inside the resolver's `io::Error` when the guard refuses an address.
#[derive(Debug)]
struct BlockedAddress;

impl std::fmt::Display for BlockedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("destination address not allowed")
    }
}

impl std::error::Error for BlockedAddress {}

/// Resolves with the system resolver, then refuses the name if *any* address is internal.
#[derive(Clone)]
pub(crate) struct GuardedResolver {
    inner: GaiResolver,
    allow_private: bool,
}

impl Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, io::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let lookup = self.inner.call(name);
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = lookup.await?.collect();
            if !allow_private && addrs.iter().any(|a| network::is_internal(a.ip())) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    BlockedAddress,
                ));
            }
            Ok(addrs.into_iter())
        })
    }
}

impl GuardedResolver {
    /// A resolver refusing internal addresses unless `allow_private`.
    pub(crate) fn new(allow_private: bool) -> Self {
        Self {
            inner: GaiResolver::new(),
            allow_private,
        }
    }
}

/// Checks what can be checked before connecting: plain `http` needs private destinations
/// allowed (a proxy stored by a process with the flag is not trusted blindly), and IP literals
/// in internal ranges are refused (the resolver is not consulted for literals).
pub(crate) fn check_literal(uri: &Uri, allow_private: bool) -> Result<(), SendError> {
    if allow_private {
        return Ok(());
    }
    if uri.scheme_str() != Some("https") {
        return Err(SendError::InsecureScheme);
    }
    let host = uri
        .host()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if network::is_internal(ip) => Err(SendError::Blocked),
        _ => Ok(()),
    }
}

/// True when the guard's refusal is somewhere in `e`'s chain.
pub(crate) fn is_blocked(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(e);
    while let Some(err) = current {
        if err.downcast_ref::<BlockedAddress>().is_some() {
            return true;
        }
        if let Some(io) = err.downcast_ref::<io::Error>() {
            if io
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<BlockedAddress>().is_some())
            {
                return true;
            }
        }
        current = err.source();
    }
    false
}
