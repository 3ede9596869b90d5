//! One trailing slash on a management path is ignored: `POST /tokens/` is `POST /tokens`, as
//! `basis-theory-js` sends it (docs/migrating.md).
//!
//! Middleware around routing, inside the request-id middleware (whose log line keeps the path as
//! sent): it rewrites the request's URI, so routing, authentication, idempotency (which hashes
//! the path: `/tokens` and `/tokens/` share a key, being one operation), audit and metrics see
//! the one canonical path. Proxy invocation is left alone: `/proxy/a/` forwards `/a/`. Only one
//! slash goes: `/tokens//` stays unknown, and `/` stays `/`.

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::uri::{PathAndQuery, Uri},
    middleware::Next,
    Error,
};

use tessera_service::mount::is_proxy_path;

/// The middleware; see the module docs.
pub(crate) async fn trim(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    if let Some(uri) = trimmed(req.uri()) {
        req.match_info_mut().get_mut().update(&uri);
        req.head_mut().uri = uri;
    }
    next.call(req).await
}

/// `uri` without the one trailing slash of its path, when it has one to lose (see the module
/// docs); `None` when it stays as it is.
fn trimmed(uri: &Uri) -> Option<Uri> {
    let path = uri.path();
    let stem = path.strip_suffix('/')?;
    if stem.is_empty() || stem.ends_with('/') || is_proxy_path(path) {
        return None;
    }
    let path_and_query = match uri.query() {
        Some(query) => format!("{stem}?{query}"),
        None => stem.to_string(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(PathAndQuery::try_from(path_and_query).ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trim(uri: &str) -> Option<String> {
        trimmed(&uri.parse::<Uri>().expect("uri")).map(|u| u.to_string())
    }

    #[test]
    fn one_trailing_slash_goes_and_the_query_stays() {
        assert_eq!(trim("/tokens/").as_deref(), Some("/tokens"));
        assert_eq!(
            trim("/tokens/?type=card&size=5").as_deref(),
            Some("/tokens?type=card&size=5")
        );
        assert_eq!(
            trim("http://h.example/applications/").as_deref(),
            Some("http://h.example/applications")
        );
        assert_eq!(
            trim("/tokens/0b6f/children/").as_deref(),
            Some("/tokens/0b6f/children")
        );
    }

    #[test]
    fn other_paths_are_left_as_sent() {
        for uri in [
            "/",
            "/tokens",
            "/tokens//",
            "//",
            "/proxy/",
            "/proxy/a/",
            "/tokens?x=/",
        ] {
            assert_eq!(trim(uri), None, "{uri}");
        }
        // Not proxy invocation: only `/proxy` and what is under it is.
        assert_eq!(trim("/proxies/").as_deref(), Some("/proxies"));
        assert_eq!(trim("/proxyx/").as_deref(), Some("/proxyx"));
    }
}
