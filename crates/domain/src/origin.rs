//! Browser origins a public application may be used from (docs/api.md, "Allowed origins").
//!
//! An origin is written exactly as a browser sends it in `Origin`: `scheme://host[:port]`, with
//! no path, query, credentials or wildcard. Only `https` is accepted, and `http` for loopback
//! hosts, so that a page served over plain HTTP on the internet can never be allowed to create
//! tokens (anyone on its path could rewrite it).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Most origins one application may list.
pub const MAX_ALLOWED_ORIGINS: usize = 50;

/// One exact browser origin, normalised as browsers serialise it (`https://shop.example`,
/// lowercase host, no default port).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct Origin(String);

impl Origin {
    /// Parses `raw` as an exact origin, or says why it is not one.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        if raw.contains('*') {
            return Err("wildcards are not allowed; list each origin exactly");
        }
        let url =
            url::Url::parse(raw).map_err(|_| "must be an origin such as `https://shop.example`")?;
        let after_scheme = raw
            .split_once("://")
            .map(|(_, rest)| rest)
            .ok_or("must be an origin such as `https://shop.example`")?;
        if after_scheme.contains(['/', '?', '#', '@']) {
            return Err("must be an origin alone: no path, query, fragment or credentials");
        }
        let loopback = match url.host() {
            // A host name of letters, digits, dots and hyphens (an IDN in its `xn--` form):
            // origins are written into CSP headers, where `;`, `,` or quotes would mean more.
            Some(url::Host::Domain(d))
                if !d
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') =>
            {
                return Err("must name a host of letters, digits, dots and hyphens");
            }
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => return Err("must name a host"),
        };
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            "http" => return Err("must use https (http only for loopback hosts, in development)"),
            _ => return Err("must be an https origin"),
        }
        Ok(Self(url.origin().ascii_serialization()))
    }

    /// The `http` origin through which a browser on this machine reaches a listener bound to
    /// `listen` ([`reachable_address`]), when it is one an origin may be (a loopback host).
    pub fn loopback_for(listen: std::net::SocketAddr) -> Option<Self> {
        Self::parse(&format!("http://{}", reachable_address(listen))).ok()
    }

    /// The origin as browsers send it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a client on this machine reaches a listener bound to `listen`: the address itself, or
/// loopback in place of an unspecified one (`0.0.0.0`, `::`).
pub fn reachable_address(listen: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let ip = match listen.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(v6) if v6.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    std::net::SocketAddr::new(ip, listen.port())
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unspecified_listener_is_reached_on_loopback() {
        let reach = |a: &str| super::reachable_address(a.parse().expect("address")).to_string();
        assert_eq!(reach("0.0.0.0:8080"), "127.0.0.1:8080");
        assert_eq!(reach("[::]:8080"), "[::1]:8080");
        assert_eq!(reach("192.168.1.5:8080"), "192.168.1.5:8080");
        assert_eq!(
            super::Origin::loopback_for("0.0.0.0:8082".parse().expect("address"))
                .map(|o| o.as_str().to_string()),
            Some("http://127.0.0.1:8082".to_string())
        );
        assert_eq!(
            super::Origin::loopback_for("192.168.1.5:8082".parse().expect("address")),
            None,
            "plain http is an origin for loopback hosts only"
        );
    }

    use super::*;

    #[test]
    fn exact_origins_are_kept_as_browsers_send_them() {
        for (raw, kept) in [
            ("https://shop.example", "https://shop.example"),
            ("https://Shop.Example:443", "https://shop.example"),
            ("https://shop.example:8443", "https://shop.example:8443"),
            ("http://localhost:3000", "http://localhost:3000"),
            ("http://127.0.0.1:5173", "http://127.0.0.1:5173"),
            ("http://[::1]:8000", "http://[::1]:8000"),
        ] {
            assert_eq!(Origin::parse(raw).expect(raw).as_str(), kept);
        }
    }

    #[test]
    fn wildcards_paths_bare_hosts_and_plain_http_are_refused() {
        for raw in [
            "*",
            "https://*.shop.example",
            "https://shop.example/",
            "https://shop.example/pay",
            "https://shop.example?x=1",
            "https://shop.example#top",
            "https://user@shop.example",
            "shop.example",
            "//shop.example",
            "http://shop.example",
            "http://10.0.0.1",
            "ftp://shop.example",
            "file:///etc/passwd",
            "null",
            "",
            "https://a;b.example",
            "https://a,b.example",
            "https://a'b.example",
        ] {
            assert!(Origin::parse(raw).is_err(), "{raw}");
        }
    }
}
