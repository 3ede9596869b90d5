//! Failed sign-ins, throttled per client address: the keys cannot be guessed, but every
//! failure costs a lookup and a log line (docs/console.md, "Signing in").
//!
//! A client may fail [`BURST`] times in a row, then once every [`EVERY`]; past that, sign-in
//! answers 429 with `Retry-After` before the key is looked at. Successful sign-ins cost
//! nothing. The client's address is the connection's peer, or, when the peer is one of the
//! configured trusted reverse proxies (`--console-trusted-proxies`), the nearest address in
//! `X-Forwarded-For` that is not itself a trusted proxy. The counts are per process.

use std::{net::IpAddr, time::Duration};

use actix_web::HttpRequest;
use tessera_service::{
    client_address::counted_client,
    rate_limit::{RateLimit, RateLimiter},
};

/// Failures allowed in a row.
pub(crate) const BURST: f64 = 10.0;
/// Then one more per this long.
pub(crate) const EVERY: Duration = Duration::from_secs(6);

/// Failed sign-ins per client address.
pub(crate) struct SignInThrottle {
    failures: RateLimiter<IpAddr>,
    trusted: Vec<IpAddr>,
}

impl std::fmt::Debug for SignInThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInThrottle")
            .field("trusted", &self.trusted)
            .finish_non_exhaustive()
    }
}

impl SignInThrottle {
    /// A throttle that believes `X-Forwarded-For` only from `trusted` peers.
    pub(crate) fn new(trusted: Vec<IpAddr>) -> Self {
        Self {
            failures: RateLimiter::new(RateLimit {
                per_second: 1.0 / EVERY.as_secs_f64(),
                burst: BURST,
            }),
            trusted,
        }
    }

    /// The address sign-in failures of `req` count against: its client, an IPv4 client
    /// alone (also when it arrives IPv4-mapped), a native IPv6 client by its /64.
    pub(crate) fn client(&self, req: &HttpRequest) -> Option<IpAddr> {
        let forwarded = req
            .headers()
            .get_all("x-forwarded-for")
            .filter_map(|v| v.to_str().ok());
        Some(counted_client(
            req.peer_addr()?.ip(),
            forwarded,
            &self.trusted,
        ))
    }

    /// `Err(wait)` when `client` has failed too often to try now.
    pub(crate) fn allowed(&self, client: Option<IpAddr>) -> Result<(), Duration> {
        client.map_or(Ok(()), |ip| self.failures.peek(&ip))
    }

    /// Counts a failure of `client`.
    pub(crate) fn failed(&self, client: Option<IpAddr>) {
        if let Some(ip) = client {
            let _ = self.failures.check(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn from(peer: &str, forwarded: Option<&str>) -> HttpRequest {
        let mut r = TestRequest::default().peer_addr(format!("{peer}:5000").parse().expect("addr"));
        if let Some(f) = forwarded {
            r = r.insert_header(("x-forwarded-for", f));
        }
        r.to_http_request()
    }

    #[test]
    fn the_forwarded_address_counts_only_from_a_trusted_proxy() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        let t = SignInThrottle::new(vec![ip("10.0.0.1"), ip("10.0.0.2")]);
        assert_eq!(
            t.client(&from("203.0.113.9", Some("1.2.3.4"))),
            Some(ip("203.0.113.9"))
        );
        assert_eq!(
            t.client(&from("10.0.0.1", Some("6.6.6.6, 1.2.3.4, 10.0.0.2"))),
            Some(ip("1.2.3.4")),
            "the nearest untrusted hop, not what the client wrote first"
        );
        assert_eq!(t.client(&from("10.0.0.1", None)), Some(ip("10.0.0.1")));
        assert_eq!(
            t.client(&from("10.0.0.1", Some("garbage"))),
            Some(ip("10.0.0.1"))
        );
    }

    #[test]
    fn failures_are_counted_per_client() {
        let t = SignInThrottle::new(vec![]);
        let (a, b) = (
            Some("1.1.1.1".parse().expect("ip")),
            Some("2.2.2.2".parse().expect("ip")),
        );
        for _ in 0..BURST as usize {
            assert!(t.allowed(a).is_ok());
            t.failed(a);
        }
        assert!(t.allowed(a).is_err(), "throttled after the burst");
        assert!(t.allowed(b).is_ok(), "another client is not");
        // Through the request, as sign-in counts them: a native IPv6 client by its /64, an
        // IPv4 client arriving IPv4-mapped as itself.
        let client = |peer: &str| t.client(&from(&format!("[{peer}]"), None));
        for _ in 0..BURST as usize {
            t.failed(client("2001:db8:1:2::1"));
        }
        assert!(
            t.allowed(client("2001:db8:1:2:ffff::9")).is_err(),
            "the same /64 is one client"
        );
        assert!(t.allowed(client("2001:db8:1:3::1")).is_ok());
        for _ in 0..BURST as usize {
            t.failed(client("::ffff:203.0.113.70"));
        }
        assert!(t.allowed(client("::ffff:203.0.113.70")).is_err());
        assert!(
            t.allowed(client("::ffff:203.0.113.71")).is_ok(),
            "mapped IPv4 clients are not one /64"
        );
    }
}
