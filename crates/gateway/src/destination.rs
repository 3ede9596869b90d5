//! Where a request is forwarded: the destination URL joined with the sub-path after `/proxy`
//! and the caller's query (docs/api.md, "Proxy invocation", step 4), and which sub-paths are refused.

use http::{HeaderMap, Uri};
use tessera_service::header_names::HeaderNames;

/// The URI to send to: `destination`, the path `suffix` after `/proxy` (exactly one `/` at the
/// joint), and the caller's query already without a proxy key, `forwarded` (after the
/// destination's own; see [`strip_proxy_key`]).
///
/// Built by joining the parts of the already parsed destination into one string that the
/// `http` crate then parses: no per-request re-parse and re-serialisation of a `url::Url`.
pub fn destination_uri(
    destination: &url::Url,
    suffix: &str,
    forwarded: &str,
) -> Result<Uri, DestinationUriError> {
    let origin = &destination[..url::Position::BeforePath];
    let base = destination.path();
    let own = destination.query().filter(|q| !q.is_empty());
    let mut out = String::with_capacity(
        origin.len() + base.len() + suffix.len() + forwarded.len() + own.map_or(0, str::len) + 3,
    );
    out.push_str(origin);
    match suffix {
        "" => out.push_str(base),
        "/" => {
            out.push_str(base);
            if !base.ends_with('/') {
                out.push('/');
            }
        }
        _ => {
            out.push_str(base.trim_end_matches('/'));
            out.push('/');
            out.push_str(suffix.trim_start_matches('/'));
        }
    }
    match (own, forwarded.is_empty()) {
        (Some(own), false) => {
            out.push('?');
            out.push_str(own);
            out.push('&');
            out.push_str(forwarded);
        }
        (Some(own), true) => {
            out.push('?');
            out.push_str(own);
        }
        (None, false) => {
            out.push('?');
            out.push_str(forwarded);
        }
        (None, true) => {}
    }
    Ok(Uri::try_from(out)?)
}

/// The joined destination is not a URI the `http` crate takes.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the destination URI: {0}")]
pub struct DestinationUriError(#[from] http::uri::InvalidUri);

/// How many layers of percent-encoding a sub-path may carry before it is refused outright.
const MAX_ENCODING_LAYERS: usize = 4;

/// Refuses a sub-path holding a dot segment (`.` or `..`): raw, percent-encoded at any depth
/// (`%2e`, `%252e`, …), with `/`, `\` or their encodings as separators, and with or without
/// `;` parameters (`..;` is `..` to Tomcat and others). Joined onto the destination URL such a
/// segment would climb out of the destination's path (`/proxy/../../admin` → `/admin`), here
/// or in whatever decodes the path once more behind the destination. A
/// sub-path still encoded after [`MAX_ENCODING_LAYERS`] decodings is refused as well.
pub fn check_sub_path(suffix: &str) -> Result<(), &'static str> {
    let is_separator = |c: char| c == '/' || c == '\\';
    let is_dot_segment = |segment: &str| {
        let name = segment.split(';').next().unwrap_or(segment);
        name == "." || name == ".."
    };
    let mut layer = std::borrow::Cow::Borrowed(suffix);
    for _ in 0..=MAX_ENCODING_LAYERS {
        if layer.split(is_separator).any(is_dot_segment) {
            return Err("the path after /proxy must not contain a dot segment (`.` or `..`, raw or percent-encoded, with or without `;` parameters)");
        }
        let decoded = percent_encoding::percent_decode_str(&layer).decode_utf8_lossy();
        if decoded == layer {
            return Ok(());
        }
        layer = std::borrow::Cow::Owned(decoded.into_owned());
    }
    Err("the path after /proxy is percent-encoded too many times")
}

/// The raw query without any `<prefix>-proxy-key` pair (nor the default `svc-proxy-key`, which
/// never reaches a destination either); other pairs keep their exact encoding.
pub fn strip_proxy_key(query: &str, names: &HeaderNames) -> String {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or("");
            let decoded: String = form_urlencoded::parse(key.as_bytes())
                .map(|(k, _)| k.into_owned())
                .next()
                .unwrap_or_default();
            !decoded.eq_ignore_ascii_case(&names.proxy_key_query)
                && !decoded.eq_ignore_ascii_case("svc-proxy-key")
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The proxy key from the `<PREFIX>-PROXY-KEY` header, else the `<prefix>-proxy-key` query
/// parameter.
pub fn proxy_key(headers: &HeaderMap, query: Option<&str>, names: &HeaderNames) -> Option<String> {
    if let Some(v) = headers.get(&names.proxy_key) {
        return v.to_str().ok().map(str::to_string);
    }
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k.eq_ignore_ascii_case(&names.proxy_key_query))
        .map(|(_, v)| v.into_owned())
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
            let parsed = url::Url::parse(dest).expect("destination");
            assert_eq!(
                destination_uri(
                    &parsed,
                    suffix,
                    &query
                        .map(|q| strip_proxy_key(q, &HeaderNames::default()))
                        .unwrap_or_default()
                )
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
            // Parameters and double encoding.
            "/proxy/a/..;/b",
            "/a/..;jsessionid=1/b",
            "/.;/x",
            "/%252e%252e/x",
            "/%25252e%25252e/x",
            "/a%252f..%252fb",
            "/%2e%2e%3b/x",
            "/%25%32%65%25%32%65/x",
            "/%2525252525252e",
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
            "/a;b/c",
            "/..a;/b",
            "/%25",
            "/100%25/x",
        ] {
            assert!(check_sub_path(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn header_key_wins_over_query_key() {
        let names = HeaderNames::default();
        let mut headers = HeaderMap::new();
        assert_eq!(
            proxy_key(&headers, Some("a=1&svc-proxy-key=q"), &names),
            Some("q".into())
        );
        headers.insert("svc-proxy-key", "h".parse().expect("value"));
        assert_eq!(
            proxy_key(&headers, Some("svc-proxy-key=q"), &names),
            Some("h".into())
        );
        assert_eq!(proxy_key(&HeaderMap::new(), None, &names), None);
    }

    #[test]
    fn a_chosen_prefix_names_the_key_and_both_spellings_stay_home() {
        let bt = HeaderNames::new("BT").expect("prefix");
        let mut headers = HeaderMap::new();
        headers.insert("svc-proxy-key", "old".parse().expect("value"));
        assert_eq!(proxy_key(&headers, Some("svc-proxy-key=q"), &bt), None);
        assert_eq!(
            proxy_key(&headers, Some("BT-Proxy-Key=q"), &bt),
            Some("q".into())
        );
        headers.insert("bt-proxy-key", "h".parse().expect("value"));
        assert_eq!(proxy_key(&headers, None, &bt), Some("h".into()));
        assert_eq!(
            strip_proxy_key("a=1&bt-proxy-key=k&svc-proxy-key=j&b=2", &bt),
            "a=1&b=2"
        );
    }
}
