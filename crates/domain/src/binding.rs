//! Destination binding: the hosts a token's data may be sent to.
//!
//! A token may carry 1–[`MAX_PATTERNS`] patterns, each one of:
//! - a host name, `api.stripe.com`: that host;
//! - a wildcard suffix, `*.openai.com`: any subdomain at any depth (`a.b.openai.com`), not
//!   the bare domain, and not a look-alike (`evilopenai.com`);
//! - an IP literal, `127.0.0.1`, `[2001:db8::1]` (or `2001:db8::1` without a port): that
//!   address, compared as an address;
//!
//! each optionally with `:port`, which must then match the destination's port (the scheme's
//! default when the URL names none); without one, any port matches. Patterns are lower-cased.
//! Whoever sends a bound token through the gateway, to a pre-configured or an ephemeral proxy,
//! can send it only to a matching host.

use std::{
    fmt,
    net::{IpAddr, Ipv6Addr},
};

use serde::{Deserialize, Serialize};

use crate::validation::ValidationErrors;

/// Most patterns one token may carry.
pub const MAX_PATTERNS: usize = 20;
/// Longest pattern, in bytes (a DNS name, a port and punctuation).
const MAX_PATTERN_LEN: usize = 262;

/// One pattern, as parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// Exactly this name.
    Name(String),
    /// Any proper subdomain of this name.
    Subdomains(String),
    /// This address.
    Ip(IpAddr),
}

/// A parsed destination pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationPattern {
    text: String,
    host: Host,
    port: Option<u16>,
}

impl fmt::Display for DestinationPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a pattern is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` is not a destination pattern: {why}")]
pub struct PatternError {
    pattern: String,
    why: &'static str,
}

fn valid_name(name: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    name.len() <= 253 && name.split('.').all(label)
}

impl DestinationPattern {
    /// Parses and lower-cases one pattern.
    pub fn parse(raw: &str) -> Result<Self, PatternError> {
        let bad = |why| PatternError {
            pattern: raw.chars().take(80).collect(),
            why,
        };
        if raw.is_empty() || raw.len() > MAX_PATTERN_LEN {
            return Err(bad("must be 1 to 262 characters"));
        }
        let text = raw.to_ascii_lowercase();
        // An IPv6 literal: bare (no port) or bracketed (with or without one).
        if let Ok(v6) = text.parse::<Ipv6Addr>() {
            return Ok(Self {
                host: Host::Ip(IpAddr::V6(v6)),
                port: None,
                text,
            });
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (addr, after) = rest.split_once(']').ok_or_else(|| bad("unclosed `[`"))?;
            let v6: Ipv6Addr = addr.parse().map_err(|_| bad("not an IPv6 address"))?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| bad("junk after `]`"))?),
            };
            (Host::Ip(IpAddr::V6(v6)), port)
        } else {
            let (host, port) = match text.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text.as_str(), None),
            };
            let host = if let Ok(ip) = host.parse::<IpAddr>() {
                Host::Ip(ip)
            } else if let Some(suffix) = host.strip_prefix("*.") {
                if !valid_name(suffix) || !suffix.contains('.') {
                    return Err(bad(
                        "a wildcard needs a domain of at least two labels after `*.`",
                    ));
                }
                Host::Subdomains(suffix.to_string())
            } else if valid_name(host) {
                Host::Name(host.to_string())
            } else {
                return Err(bad(
                    "expected a host name, `*.domain`, or an IP literal, optionally with `:port`",
                ));
            };
            (host, port)
        };
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| bad("the port must be 1 to 65535"))
            })
            .transpose()?;
        Ok(Self { text, host, port })
    }

    /// Whether a request to `host` (as in its URL: a name, an IPv4 literal or a bracketed
    /// IPv6 literal) on `port` may carry the token.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let literal = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        match (&self.host, literal) {
            (Host::Ip(ip), Some(address)) => address == *ip,
            // An address is not a name: `*.0.0.1` must not match `127.0.0.1`.
            (_, Some(_)) | (Host::Ip(_), None) => false,
            (Host::Name(name), None) => host == *name,
            (Host::Subdomains(suffix), None) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

/// A token's binding: the patterns one of which a destination must match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct Destinations(Vec<DestinationPattern>);

impl TryFrom<Vec<String>> for Destinations {
    type Error = PatternError;

    fn try_from(raw: Vec<String>) -> Result<Self, PatternError> {
        raw.iter()
            .map(|p| DestinationPattern::parse(p))
            .collect::<Result<_, _>>()
            .map(Destinations)
    }
}

impl From<Destinations> for Vec<String> {
    fn from(d: Destinations) -> Self {
        d.0.into_iter().map(|p| p.text).collect()
    }
}

impl Destinations {
    /// Validates what a request gave as `destinations` (1–[`MAX_PATTERNS`] patterns),
    /// recording problems under `field` (`destinations[i]` for a bad pattern).
    pub fn validate(raw: &[String], field: &str, errors: &mut ValidationErrors) -> Option<Self> {
        if raw.is_empty() || raw.len() > MAX_PATTERNS {
            errors.add(
                field,
                format!("must hold 1 to {MAX_PATTERNS} patterns (or be null: unbound)"),
            );
            return None;
        }
        let mut patterns = Vec::with_capacity(raw.len());
        for (i, p) in raw.iter().enumerate() {
            match DestinationPattern::parse(p) {
                Ok(p) if !patterns.contains(&p) => patterns.push(p),
                Ok(_) => {}
                Err(e) => errors.add(format!("{field}[{i}]"), e.to_string()),
            }
        }
        Some(Destinations(patterns))
    }

    /// Whether a request to `host` on `port` may carry the token.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.0.iter().any(|p| p.allows(host, port))
    }

    /// The patterns as text, lower-cased.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|p| p.text.as_str())
    }

    /// The bytes the token's ciphertext is bound to: the patterns, one per line, in order.
    pub fn sealed_form(&self) -> Vec<u8> {
        self.patterns().collect::<Vec<_>>().join("\n").into_bytes()
    }
}

/// [`Destinations::sealed_form`] of an optional binding (empty: unbound).
pub fn sealed_form(binding: Option<&Destinations>) -> Vec<u8> {
    binding.map(Destinations::sealed_form).unwrap_or_default()
}

impl Destinations {
    /// The binding as stored (JSON array of patterns), for the store's column.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.patterns().collect::<Vec<_>>()).unwrap_or_default()
    }
}

/// Where a request carrying tokens goes: the destination's host and port, and whether the
/// caller chose it (an ephemeral proxy) rather than the proxy's author.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host, as in the URL.
    pub host: String,
    /// The port (the scheme's default when the URL names none).
    pub port: u16,
    /// An ephemeral proxy: only bound tokens may go, unless the operator allows unbound ones.
    pub ephemeral: bool,
}

impl Target {
    /// The target of `url` (`None` for a URL without a host).
    pub fn of(url: &url::Url, ephemeral: bool) -> Option<Self> {
        Some(Self {
            host: url.host_str()?.to_string(),
            port: url.port_or_known_default()?,
            ephemeral,
        })
    }

    /// `host[:port]`, for messages and the audit trail.
    pub fn display(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// `Ok` when token `id`, bound to `destinations` (or not), may be sent to `target`: a bound
/// token only to a matching host; an unbound one anywhere a pre-configured proxy goes, but
/// through an ephemeral proxy only when `allow_unbound` (the operator's
/// `--ephemeral-unbound-tokens`). Else a 403 naming the token.
pub fn check(
    id: &crate::ids::TokenId,
    destinations: Option<&Destinations>,
    target: &Target,
    allow_unbound: bool,
) -> Result<(), crate::error::VaultError> {
    use crate::error::VaultError;
    match destinations {
        Some(d) if d.allows(&target.host, target.port) => Ok(()),
        Some(_) => Err(VaultError::DestinationRefused(format!(
            "token {id} may not be sent to {}: the destination is not allowed for it",
            target.display()
        ))),
        None if target.ephemeral && !allow_unbound => Err(VaultError::DestinationRefused(format!(
            "token {id} is not bound to destinations: an ephemeral proxy detokenizes only destination-bound tokens"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(pattern: &str, host: &str, port: u16) -> bool {
        DestinationPattern::parse(pattern)
            .unwrap_or_else(|e| panic!("{e}"))
            .allows(host, port)
    }

    #[test]
    fn exact_hosts_wildcards_and_look_alikes() {
        assert!(allows("api.stripe.com", "api.stripe.com", 443));
        assert!(allows("API.Stripe.COM", "api.stripe.com", 8443), "any port");
        assert!(
            allows("api.stripe.com", "API.STRIPE.COM.", 443),
            "case, trailing dot"
        );
        assert!(!allows("api.stripe.com", "stripe.com", 443));
        assert!(!allows("api.stripe.com", "api.stripe.com.evil.io", 443));
        assert!(allows("*.openai.com", "api.openai.com", 443));
        assert!(allows("*.openai.com", "a.b.openai.com", 443));
        assert!(
            !allows("*.openai.com", "openai.com", 443),
            "not the bare domain"
        );
        assert!(
            !allows("*.openai.com", "evilopenai.com", 443),
            "a look-alike"
        );
        assert!(!allows("*.openai.com", "openai.com.evil.io", 443));
    }

    #[test]
    fn ports_and_ip_literals() {
        assert!(allows("127.0.0.1:8443", "127.0.0.1", 8443));
        assert!(!allows("127.0.0.1:8443", "127.0.0.1", 443));
        assert!(!allows("127.0.0.1", "127.0.0.2", 443));
        assert!(allows("api.stripe.com:443", "api.stripe.com", 443));
        assert!(!allows("api.stripe.com:443", "api.stripe.com", 444));
        assert!(allows("[2001:DB8::1]:443", "[2001:db8::1]", 443));
        assert!(
            allows("2001:db8::1", "[2001:db8:0::1]", 8080),
            "as an address"
        );
        assert!(!allows("[2001:db8::1]:443", "[2001:db8::1]", 80));
        assert!(!allows("*.openai.com:443", "x.openai.com", 80));
        assert!(
            !allows("*.0.0.1", "127.0.0.1", 443),
            "an address is not a name"
        );
        assert!(!allows("127.0.0.1", "127.0.0.1.nip.io", 443));
    }

    #[test]
    fn bad_patterns_are_named() {
        for bad in [
            "",
            "*.com",
            "*",
            "a..b",
            "-a.com",
            "a.com:0",
            "a.com:99999",
            "a.com:x",
            "http://a.com",
            "a.com/x",
            "[::1",
            "[::1]x",
            "*.*.a.com",
            "a b.com",
        ] {
            assert!(DestinationPattern::parse(bad).is_err(), "{bad:?}");
        }
        let mut errors = ValidationErrors::new();
        assert!(Destinations::validate(
            &["ok.com".into(), "b@d".into()],
            "destinations",
            &mut errors
        )
        .is_some());
        assert_eq!(
            errors.fields().keys().collect::<Vec<_>>(),
            ["destinations[1]"]
        );
        let mut errors = ValidationErrors::new();
        assert!(Destinations::validate(&[], "destinations", &mut errors).is_none());
        let many: Vec<String> = (0..21).map(|i| format!("h{i}.com")).collect();
        assert!(Destinations::validate(&many, "destinations", &mut errors).is_none());
    }
}
