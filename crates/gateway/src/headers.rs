//! Which headers cross the gateway: hop-by-hop headers (RFC 9110 §7.6.1, and those a
//! `Connection` header lists) never do; nor do `Host` (set from the destination),
//! `Content-Length` (recomputed from the body actually sent) or, towards the destination,
//! any `SVC-*` header (SUPPLEMENT §5.1). Headers are removed in place: no copy of the map.

use http::{header, HeaderMap, HeaderName};

/// Header carrying the proxy key.
pub const PROXY_KEY_HEADER: &str = "svc-proxy-key";
/// Header carrying the caller's API key.
pub const API_KEY_HEADER: &str = "svc-api-key";
/// The destination of an ephemeral proxy (issue 27).
pub const PROXY_URL_HEADER: &str = "svc-proxy-url";
/// Response header with the destination's status.
pub const DESTINATION_STATUS_HEADER: &str = "svc-proxy-destination-status";

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

/// Names that must not cross, found in one pass over `headers`.
fn doomed(headers: &HeaderMap, request: bool) -> Vec<HeaderName> {
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
            || (request && (name == header::HOST || n.starts_with("svc-")))
        {
            out.push(name.clone());
        }
    }
    out
}

/// Removes from a caller's request what must not reach the destination.
pub fn strip_request(headers: &mut HeaderMap) {
    for name in doomed(headers, true) {
        headers.remove(name);
    }
}

/// Removes from a destination's response what must not reach the caller.
pub fn strip_response(headers: &mut HeaderMap) {
    for name in doomed(headers, false) {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        strip_request(&mut out);
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
