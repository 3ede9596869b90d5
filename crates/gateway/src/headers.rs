//! Which headers cross the gateway: hop-by-hop headers (RFC 9110 §7.6.1, and those a
//! `Connection` header lists) never do; nor do `Host` (set from the destination),
//! `Content-Length` (recomputed from the body actually sent) or, towards the destination,
//! any header with the deployment's prefix or the default `SVC-` one, nor Tessera's own
//! cookies. Every answer is hardened for browsers
//! ([`harden_answer`], docs/api.md "What comes back"). Headers are removed in place: no copy of
//! the map.

use http::{header, HeaderMap, HeaderName, HeaderValue};
use tessera_service::{header_names::HeaderNames, request_id};

/// Hop-by-hop headers (RFC 9110 §7.6.1 and the proxy-specific ones of RFC 9110 §11.7).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
];

/// Response headers a `/proxy` answer never carries, whoever set them (a destination or a
/// transform): a cookie could be read by a browser as another service's on the same host
/// (cookies ignore ports, docs/console.md), and the other two hand a page powers over the
/// origin it was served from.
const NEVER_ANSWERED: [&str; 4] = [
    "set-cookie",
    "set-cookie2",
    "service-worker-allowed",
    "clear-site-data",
];

/// The policy of every `/proxy` answer: a relayed page runs in an opaque origin with scripts,
/// forms and plugins off, whatever its content type claims.
pub const PROXY_ANSWER_CSP: &str = "sandbox";

/// Cookies of Tessera's own browser-facing services (the console's session and sign-in
/// cookies, with or without the `__Host-` prefix). A browser may send them along with a request
/// to `/proxy` on the same host; they are never forwarded to a destination.
const OWN_COOKIE_PREFIXES: [&str; 2] = ["tessera_", "__host-tessera_"];

/// Names that must not cross, found in one pass over `headers`; `own` is given for a request
/// (towards a destination), whose own headers go too.
fn doomed(headers: &HeaderMap, own: Option<&HeaderNames>) -> Vec<HeaderName> {
    let mut out: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in headers.keys() {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n)
            || name == header::CONTENT_LENGTH
            || own.is_some_and(|own| name == header::HOST || own.is_own(n))
        {
            out.push(name.clone());
        }
    }
    out
}

/// Removes from a caller's request what must not reach the destination (nor a transform):
/// the headers above (`names` tells Tessera's own) and Tessera's own cookies.
pub fn strip_request(headers: &mut HeaderMap, names: &HeaderNames) {
    for name in doomed(headers, Some(names)) {
        headers.remove(name);
    }
    strip_own_cookies(headers);
}

/// Removes from a destination's response what must not reach the caller.
pub fn strip_response(headers: &mut HeaderMap) {
    for name in doomed(headers, None) {
        headers.remove(name);
    }
}

/// Makes any `/proxy` answer (relayed, transformed, a transform's own or a `proxy_error`)
/// safe to reach a browser: drops the headers of [`NEVER_ANSWERED`] and sets
/// `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox` (a destination's own
/// policy is kept beside it: browsers enforce both).
pub fn harden_answer(headers: &mut HeaderMap) {
    for name in NEVER_ANSWERED {
        headers.remove(name);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.append(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PROXY_ANSWER_CSP),
    );
}

/// Removes Tessera's own cookies ([`OWN_COOKIE_PREFIXES`]) from the `Cookie` headers of a
/// request on its way to a destination; a header left empty goes.
fn strip_own_cookies(headers: &mut HeaderMap) {
    if !headers.contains_key(header::COOKIE) {
        return;
    }
    let kept: Vec<HeaderValue> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| {
            let Ok(text) = value.to_str() else {
                // Not text: it cannot be parsed, so it cannot be vetted either.
                return None;
            };
            let pairs: Vec<&str> = text
                .split(';')
                .map(str::trim)
                .filter(|pair| !pair.is_empty() && !is_own_cookie(pair))
                .collect();
            if pairs.is_empty() {
                return None;
            }
            HeaderValue::from_str(&pairs.join("; ")).ok()
        })
        .collect();
    headers.remove(header::COOKIE);
    for value in kept {
        headers.append(header::COOKIE, value);
    }
}

/// Whether a `name=value` cookie pair is one of Tessera's own. A pair without `=` is a
/// nameless cookie whose value a server may read as a name: judged by the whole pair.
fn is_own_cookie(pair: &str) -> bool {
    let name = pair.split('=').next().unwrap_or(pair).trim();
    let name = name.to_ascii_lowercase();
    OWN_COOKIE_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Sets `X-Request-Id` to `request_id` unless the answer already carries one.
pub(crate) fn add_request_id(headers: &mut HeaderMap, request_id: &str) {
    if !headers.contains_key(request_id::HEADER) {
        if let Ok(id) = HeaderValue::from_str(request_id) {
            headers.insert(request_id::HEADER, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_hardened() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("set-cookie", "tessera_console=planted; Path=/console"),
            ("set-cookie", "=tessera_console=planted"),
            ("set-cookie2", "a=b"),
            ("service-worker-allowed", "/"),
            ("clear-site-data", "\"cookies\""),
            ("x-content-type-options", "sniff-please"),
            ("content-security-policy", "default-src 'self'"),
            ("content-type", "text/html"),
        ] {
            h.append(HeaderName::from_static(k), v.parse().expect("value"));
        }
        harden_answer(&mut h);
        for gone in NEVER_ANSWERED {
            assert!(!h.contains_key(gone), "{gone}");
        }
        assert_eq!(h["x-content-type-options"], "nosniff");
        let csp: Vec<_> = h.get_all("content-security-policy").iter().collect();
        assert_eq!(csp, ["default-src 'self'", "sandbox"]);
        assert_eq!(h["content-type"], "text/html");
    }

    #[test]
    fn own_cookies_never_reach_a_destination() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            "a=1; tessera_console=s1; __Host-tessera_console=s2; b=2"
                .parse()
                .expect("value"),
        );
        h.append(
            header::COOKIE,
            "Tessera_Console_Signin=x".parse().expect("value"),
        );
        h.append(header::COOKIE, "tessera_console".parse().expect("value"));
        strip_own_cookies(&mut h);
        let left: Vec<_> = h.get_all(header::COOKIE).iter().collect();
        assert_eq!(left, ["a=1; b=2"]);
        let mut none = HeaderMap::new();
        strip_own_cookies(&mut none);
        assert!(none.is_empty());
    }

    fn sample() -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-secret-hop"),
            ("x-secret-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("host", "gateway.local"),
            ("content-length", "10"),
            ("svc-api-key", "key_x"),
            ("svc-proxy-key", "k"),
            ("authorization", "Bearer t"),
            ("x-request-id", "r1"),
        ] {
            h.append(HeaderName::from_static(k), v.parse().expect("value"));
        }
        h
    }

    #[test]
    fn strips_hop_by_hop_host_length_and_svc_headers() {
        let mut out = sample();
        strip_request(&mut out, &HeaderNames::default());
        let mut names: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, vec!["authorization", "x-request-id"]);
        let mut out = sample();
        strip_response(&mut out);
        assert!(
            out.contains_key("svc-api-key")
                && !out.contains_key("content-length")
                && !out.contains_key("x-secret-hop")
        );
    }
}
