//! What is forwarded: the destination URI and the headers, minus what must not cross a proxy.

use http::{header, HeaderMap, HeaderName, Uri};

/// Query parameter that may carry the proxy key (removed before forwarding).
pub const PROXY_KEY_QUERY: &str = "svc-proxy-key";

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

/// The URI to send to: the destination, the path suffix after `/proxy` (exactly one `/` at
/// the joint), and the caller's query without `svc-proxy-key` (after the destination's own).
pub fn destination_uri(
    destination: &str,
    suffix: &str,
    query: Option<&str>,
) -> Result<Uri, String> {
    let mut url = url::Url::parse(destination)
        .map_err(|e| format!("the proxy's destination URL is invalid: {e}"))?;
    destination_uri_from(&mut url, suffix, query)
}

/// [`destination_uri`] for an already parsed destination (modified in place).
pub fn destination_uri_from(
    url: &mut url::Url,
    suffix: &str,
    query: Option<&str>,
) -> Result<Uri, String> {
    if !suffix.is_empty() && suffix != "/" {
        let path = format!(
            "{}/{}",
            url.path().trim_end_matches('/'),
            suffix.trim_start_matches('/')
        );
        url.set_path(&path);
    } else if suffix == "/" && !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    let forwarded = query.map(strip_proxy_key).unwrap_or_default();
    let joined = match (url.query().filter(|q| !q.is_empty()), forwarded.is_empty()) {
        (Some(own), false) => Some(format!("{own}&{forwarded}")),
        (Some(own), true) => Some(own.to_string()),
        (None, false) => Some(forwarded),
        (None, true) => None,
    };
    url.set_query(joined.as_deref());
    url.as_str()
        .parse::<Uri>()
        .map_err(|e| format!("cannot build the destination URI: {e}"))
}

/// Refuses a sub-path holding a dot segment (`.` or `..`), raw or percent-encoded, with `/`,
/// `\\` or their encodings as separators: joined onto the destination URL it would climb out of
/// the destination's path (`/proxy/../../admin` → `/admin`).
pub fn check_sub_path(suffix: &str) -> Result<(), &'static str> {
    let is_separator = |c: char| c == '/' || c == '\\';
    let dotted = suffix.split(is_separator).any(|raw| {
        let decoded = percent_encoding::percent_decode_str(raw).decode_utf8_lossy();
        decoded
            .split(is_separator)
            .any(|segment| segment == "." || segment == "..")
    });
    if dotted {
        Err("the path after /proxy must not contain a dot segment (`.` or `..`, raw or percent-encoded)")
    } else {
        Ok(())
    }
}

/// The raw query without any `svc-proxy-key` pair; other pairs keep their exact encoding.
pub fn strip_proxy_key(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or("");
            let decoded: String = form_urlencoded::parse(key.as_bytes())
                .map(|(k, _)| k.into_owned())
                .next()
                .unwrap_or_default();
            !decoded.eq_ignore_ascii_case(PROXY_KEY_QUERY)
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The proxy key from the `SVC-PROXY-KEY` header, else the `svc-proxy-key` query parameter.
pub fn proxy_key(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(v) = headers.get(super::PROXY_KEY_HEADER) {
        return v.to_str().ok().map(str::to_string);
    }
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k.eq_ignore_ascii_case(PROXY_KEY_QUERY))
        .map(|(_, v)| v.into_owned())
}

/// Names listed in `Connection` (they are hop-by-hop too).
fn connection_listed(headers: &HeaderMap) -> Vec<HeaderName> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect()
}

/// Headers of the caller's request that may be forwarded: no hop-by-hop headers, no `Host`
/// (set from the destination), no `Content-Length` (recomputed), no `SVC-*`.
pub fn request_headers(headers: &HeaderMap) -> HeaderMap {
    let listed = connection_listed(headers);
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n)
            || listed.contains(name)
            || name == header::HOST
            || name == header::CONTENT_LENGTH
            || n.starts_with("svc-")
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Headers of the destination's response that may be returned: no hop-by-hop headers and no
/// `Content-Length` (recomputed from the body that is actually sent).
pub fn response_headers(headers: &HeaderMap) -> HeaderMap {
    let listed = connection_listed(headers);
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if HOP_BY_HOP.contains(&name.as_str())
            || listed.contains(name)
            || name == header::CONTENT_LENGTH
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_paths_with_exactly_one_slash_and_keeps_queries() {
        let cases = [
            (
                "https://api.example.com",
                "",
                None,
                "https://api.example.com/",
            ),
            (
                "https://api.example.com/v1",
                "",
                None,
                "https://api.example.com/v1",
            ),
            (
                "https://api.example.com/v1/",
                "/charges",
                None,
                "https://api.example.com/v1/charges",
            ),
            (
                "https://api.example.com/v1",
                "/a/b",
                Some("x=1&svc-proxy-key=k&y=%20"),
                "https://api.example.com/v1/a/b?x=1&y=%20",
            ),
            (
                "https://api.example.com/v1?api=2",
                "/a",
                Some("x=1"),
                "https://api.example.com/v1/a?api=2&x=1",
            ),
            (
                "https://api.example.com/v1",
                "",
                Some("svc-proxy-key=k"),
                "https://api.example.com/v1",
            ),
        ];
        for (dest, suffix, query, expected) in cases {
            assert_eq!(
                destination_uri(dest, suffix, query)
                    .expect("uri")
                    .to_string(),
                expected,
                "{dest} {suffix}"
            );
        }
    }

    #[test]
    fn dot_segments_are_refused_in_every_spelling() {
        for bad in [
            "/..",
            "/.",
            "/a/../b",
            "/%2e%2e/x",
            "/%2E./x",
            "/.%2e",
            "/a/..%2fb",
            "\\..\\x",
            "/x/..%5c",
        ] {
            assert!(check_sub_path(bad).is_err(), "{bad}");
        }
        for ok in [
            "",
            "/",
            "/a/b",
            "/v1.2/x..y",
            "/.well-known/x",
            "/...",
            "/%2e%2e%2e",
        ] {
            assert!(check_sub_path(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn header_key_wins_over_query_key() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            proxy_key(&headers, Some("a=1&svc-proxy-key=q")),
            Some("q".into())
        );
        headers.insert("svc-proxy-key", "h".parse().expect("value"));
        assert_eq!(
            proxy_key(&headers, Some("svc-proxy-key=q")),
            Some("h".into())
        );
        assert_eq!(proxy_key(&HeaderMap::new(), None), None);
    }

    #[test]
    fn strips_hop_by_hop_host_length_and_svc_headers() {
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
        let out = request_headers(&h);
        let names: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, vec!["authorization", "x-request-id"]);
        let out = response_headers(&h);
        assert!(
            out.contains_key("svc-api-key")
                && !out.contains_key("content-length")
                && !out.contains_key("x-secret-hop")
        );
    }
}
