//! The console's cookies: their names and flags, and the session id a request presents.
//!
//! Sessions themselves are the vault's ([`tessera_domain::Vault::open_console_session`]):
//! stored, shared by every replica, read on every request. Here:
//!
//! * Over TLS the cookies take the `__Host-` prefix (so `Secure`, `Path=/`, no `Domain`: no
//!   other host or plain-HTTP page can set one a browser would send here); otherwise they are
//!   scoped to `Path=/console`. Always `HttpOnly` and `SameSite=Strict`.
//! * A request that carries more than one session cookie (one planted beside the browser's
//!   own, on a narrower path or through a cookie parser's quirk) is refused: every session it
//!   names is ended, the cookies are cleared on every path they could have been set for, and
//!   the browser is asked to sign in again (docs/console.md, "Sessions").

use actix_web::{
    cookie::{Cookie, SameSite},
    http::header,
    HttpRequest,
};

use crate::mount::{MOUNT, SESSION_COOKIE};

/// The prefix that binds a cookie to the exact host, `Secure` and `Path=/`.
const HOST_PREFIX: &str = "__Host-";

/// Whether `req` came over TLS (directly or, per `Forwarded`/`X-Forwarded-Proto`, through a
/// proxy).
fn over_tls(req: &HttpRequest) -> bool {
    req.connection_info().scheme() == "https"
}

/// The name cookie `base` has on `req`: `__Host-<base>` over TLS, `base` otherwise.
pub(crate) fn cookie_name(req: &HttpRequest, base: &str) -> String {
    if over_tls(req) {
        format!("{HOST_PREFIX}{base}")
    } else {
        base.to_string()
    }
}

/// `Set-Cookie` of cookie `base` with `value`: `HttpOnly`, `SameSite=Strict`; over TLS
/// `__Host-`, `Secure`, `Path=/`; otherwise `Path=/console`. No `Max-Age`: the server decides
/// when a session ends.
pub(crate) fn cookie(req: &HttpRequest, base: &str, value: String) -> Cookie<'static> {
    let tls = over_tls(req);
    let mut cookie = Cookie::new(cookie_name(req, base), value);
    cookie.set_path(if tls { "/" } else { MOUNT });
    cookie.set_http_only(true);
    cookie.set_same_site(SameSite::Strict);
    cookie.set_secure(tls);
    cookie
}

/// The cookie that deletes cookie `base` (same path and flags, expired).
pub(crate) fn removal(req: &HttpRequest, base: &str) -> Cookie<'static> {
    let mut c = cookie(req, base, String::new());
    c.make_removal();
    c
}

/// The session ids a request presents.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Presented {
    /// No session cookie.
    None,
    /// Exactly one.
    One(String),
    /// Several (ids of the well-formed ones): refused.
    Several(Vec<String>),
}

/// The session cookies of `req`, read from the raw `Cookie` headers so that duplicates are
/// seen: every pair whose name is the session cookie's in any letter case counts, and so does
/// a pair without `=` (a nameless cookie some parsers read as a name).
pub(crate) fn presented(req: &HttpRequest) -> Presented {
    let name = cookie_name(req, SESSION_COOKIE);
    let mut found = Vec::new();
    let mut count = 0usize;
    for value in req.headers().get_all(header::COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
            let n = n.trim();
            if n.eq_ignore_ascii_case(&name) || n.eq_ignore_ascii_case(SESSION_COOKIE) {
                count += 1;
                if n == name {
                    found.push(v.trim().to_string());
                }
            }
        }
    }
    match (count, found.len()) {
        (0, _) => Presented::None,
        (1, 1) => Presented::One(found.swap_remove(0)),
        _ => Presented::Several(found),
    }
}

/// Removal cookies for the session cookie on every path a cookie sent with `req` could have
/// been set for (each ancestor of the request's path, under both names), since a browser
/// deletes a cookie only when name and path match.
pub(crate) fn clear_everywhere(req: &HttpRequest) -> Vec<Cookie<'static>> {
    let mut paths = vec!["/".to_string()];
    let mut at = String::new();
    for segment in req.path().split('/').filter(|s| !s.is_empty()) {
        at.push('/');
        at.push_str(segment);
        paths.push(at.clone());
        paths.push(format!("{at}/"));
    }
    let mut out = Vec::new();
    for name in [
        SESSION_COOKIE.to_string(),
        format!("{HOST_PREFIX}{SESSION_COOKIE}"),
    ] {
        for path in &paths {
            let mut c = Cookie::new(name.clone(), "");
            c.set_path(path.clone());
            c.set_http_only(true);
            c.set_same_site(SameSite::Strict);
            c.set_secure(name.starts_with(HOST_PREFIX));
            c.make_removal();
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn with_cookies(headers: &[&str]) -> HttpRequest {
        let mut r = TestRequest::get().uri("/console/tokens/new");
        for h in headers {
            r = r.append_header((header::COOKIE, *h));
        }
        r.to_http_request()
    }

    #[test]
    fn one_cookie_is_a_session_and_two_are_refused() {
        assert_eq!(presented(&with_cookies(&[])), Presented::None);
        assert_eq!(
            presented(&with_cookies(&["a=1; tessera_console=s1"])),
            Presented::One("s1".into())
        );
        assert!(matches!(
            presented(&with_cookies(&["tessera_console=evil; tessera_console=s1"])),
            Presented::Several(ids) if ids.len() == 2
        ));
        assert!(matches!(
            presented(&with_cookies(&["tessera_console=s1", "TESSERA_CONSOLE=x"])),
            Presented::Several(_)
        ));
        assert!(matches!(
            presented(&with_cookies(&["tessera_console=s1; tessera_console"])),
            Presented::Several(_)
        ));
    }

    #[test]
    fn tls_uses_the_host_prefix() {
        let req = TestRequest::get()
            .uri("/console")
            .insert_header(("x-forwarded-proto", "https"))
            .to_http_request();
        let c = cookie(&req, SESSION_COOKIE, "v".into());
        assert_eq!(c.name(), "__Host-tessera_console");
        assert_eq!((c.path(), c.secure()), (Some("/"), Some(true)));
        let plain = cookie(&with_cookies(&[]), SESSION_COOKIE, "v".into());
        assert_eq!(plain.name(), "tessera_console");
        assert_eq!(plain.path(), Some(MOUNT));
        assert_eq!(plain.http_only(), Some(true));
    }

    #[test]
    fn clearing_covers_every_ancestor_path() {
        let paths: Vec<String> = clear_everywhere(&with_cookies(&[]))
            .iter()
            .filter(|c| c.name() == SESSION_COOKIE)
            .filter_map(|c| c.path().map(str::to_string))
            .collect();
        for p in ["/", "/console", "/console/tokens", "/console/tokens/new"] {
            assert!(paths.iter().any(|x| x == p), "{p}: {paths:?}");
        }
    }
}
