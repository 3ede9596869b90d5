//! Every console answer — pages, redirects, assets, errors, refusals — carries the security
//! headers; the cookies carry their flags.

use std::time::Duration;

use actix_web::{
    cookie::SameSite,
    http::{header, Method, StatusCode},
};
use tessera_console::{SECURITY_HEADERS, SESSION_COOKIE, SIGN_IN_COOKIE};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::support::{client, Page, Setup};

backend_tests!(
    every_console_answer_carries_the_security_headers,
    cookies_are_http_only_strict_and_scoped,
);

fn assert_secured(what: &str, page: &Page) {
    for (name, value) in SECURITY_HEADERS {
        assert_eq!(
            page.headers.get(name).and_then(|v| v.to_str().ok()),
            Some(value),
            "{what}: {name}"
        );
    }
    assert!(
        page.headers.contains_key("x-request-id"),
        "{what}: request id"
    );
    if page.status.is_client_error() || page.status.is_server_error() {
        let ct = page
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        assert_eq!(
            ct,
            Some("text/html; charset=utf-8"),
            "{what}: errors are pages"
        );
    }
}

/// Every GET route of the console, with ids that exist and ids that do not, and queries that
/// are refused.
fn get_routes(token: &str, proxy: &str, app: &str) -> Vec<String> {
    let mut routes: Vec<String> = [
        "",
        "/tokens",
        "/tokens?metadata=customer%3Dc_1",
        "/tokens?page=0",
        "/tokens/new",
        "/tokens/not-a-uuid",
        "/proxies",
        "/proxies/new",
        "/applications",
        "/applications/new",
        "/audit",
        "/audit?from=yesterday",
        "/assets/console.css",
        "/assets/console.js",
        "/assets/favicon.svg",
        "/assets/missing.js",
        "/no/such/page",
        "/proxies?name=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "/tokens?deleted=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    ]
    .iter()
    .map(|p| format!("/console{p}"))
    .collect();
    for suffix in ["", "/edit", "/delete"] {
        routes.push(format!("/console/tokens/{token}{suffix}"));
    }
    for suffix in ["", "/delete"] {
        routes.push(format!("/console/proxies/{proxy}{suffix}"));
    }
    for suffix in ["", "/regenerate", "/delete"] {
        routes.push(format!("/console/applications/{app}{suffix}"));
    }
    routes.push(format!("/console/tokens/{}", uuid::Uuid::new_v4()));
    routes
}

async fn every_console_answer_carries_the_security_headers(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let token = s.card().await;
    let (proxy, _) = s
        .proxy(serde_json::json!({"name": "p", "destination_url": s.harness.upstream_url()}))
        .await;
    let mut c = client(&s).await;
    let outside = c.get("/console/tokens").await;
    assert_eq!(
        outside.status,
        StatusCode::SEE_OTHER,
        "no session: to sign-in"
    );
    assert_eq!(outside.location(), "/console");
    assert_secured("redirect without session", &outside);
    assert_secured("sign-in page", &c.get("/console").await);
    let wrong = c.sign_in("key_wrongwrongwrongwrongwrongwrongwr").await;
    assert_secured("wrong key", &wrong);
    let csrf = c.signed_in(&s.admin_key).await;
    let mut seen = Vec::new();
    for path in get_routes(&token, &proxy, &s.admin.application_id().to_string()) {
        let page = c.get(&path).await;
        assert_secured(&path, &page);
        assert!(
            !page.body.contains("<script>alert"),
            "{path}: reflected markup is escaped"
        );
        seen.push(page.status.as_u16());
    }
    assert!(seen.contains(&404) && seen.contains(&400) && seen.contains(&303));
    let wrong_method = c.send(Method::PUT, "/console/tokens", None).await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_secured("405", &wrong_method);
    let refused = c
        .post(&format!("/console/tokens/{token}/reveal"), &[])
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_secured("CSRF refusal", &refused);
    let not_a_form = c
        .send(
            Method::POST,
            &format!("/console/tokens/{token}/reveal"),
            None,
        )
        .await;
    assert_eq!(not_a_form.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_secured("415", &not_a_form);
    let revealed = c
        .post(
            &format!("/console/tokens/{token}/reveal"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(revealed.status, StatusCode::OK);
    assert_secured("revealed page", &revealed);
    let out = c.post("/console/sign-out", &[("csrf", &csrf)]).await;
    assert_secured("sign-out redirect", &out);
}

async fn cookies_are_http_only_strict_and_scoped(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let form = c.get("/console").await;
    let signin = form
        .set_cookies()
        .into_iter()
        .find(|k| k.name() == SIGN_IN_COOKIE)
        .expect("sign-in cookie");
    assert_eq!(signin.http_only(), Some(true));
    assert_eq!(signin.same_site(), Some(SameSite::Strict));
    assert_eq!(signin.path(), Some("/console"));
    let res = c.sign_in(&s.admin_key).await;
    let session = res
        .set_cookies()
        .into_iter()
        .find(|k| k.name() == SESSION_COOKIE)
        .expect("session cookie");
    assert_eq!(session.http_only(), Some(true));
    assert_eq!(session.same_site(), Some(SameSite::Strict));
    assert_eq!(session.path(), Some("/console"));
    assert_ne!(session.secure(), Some(true), "plain HTTP: not Secure");
    assert_eq!(session.max_age(), None, "the server decides when it ends");
    assert_eq!(session.value().len(), 43, "32 random bytes");
    assert!(!res.body.contains(&s.admin_key) && !session.value().contains(&s.admin_key));
    for h in res.headers.get_all(header::SET_COOKIE) {
        assert!(
            !h.to_str().unwrap_or("").contains(&s.admin_key),
            "the key never goes to the browser"
        );
    }

    // Behind a TLS-terminating proxy that says so, the cookies are `__Host-` (so Secure,
    // `Path=/` and no Domain): no plain-HTTP page or other host can set one.
    let mut tls = client(&s).await;
    tls.headers
        .push(("x-forwarded-proto".into(), "https".into()));
    let form = tls.get("/console").await;
    let signin = form
        .set_cookies()
        .into_iter()
        .find(|k| k.name() == format!("__Host-{SIGN_IN_COOKIE}"))
        .expect("__Host- sign-in cookie");
    assert_eq!((signin.secure(), signin.path()), (Some(true), Some("/")));
    let res = tls
        .post(
            "/console/sign-in",
            &[("csrf", &form.csrf()), ("api_key", &s.admin_key)],
        )
        .await;
    let host_name = format!("__Host-{SESSION_COOKIE}");
    let session = res
        .set_cookies()
        .into_iter()
        .find(|k| k.name() == host_name)
        .expect("__Host- session cookie");
    assert_eq!(session.secure(), Some(true));
    assert_eq!(session.path(), Some("/"));
    assert_eq!(session.domain(), None);
    assert_eq!(
        tls.get("/console/tokens").await.status,
        StatusCode::OK,
        "the prefixed cookie is the session over TLS"
    );
    // Over TLS an unprefixed cookie (settable by any plain-HTTP page of the host) is no session.
    let id = tls.cookies.remove(&host_name).expect("kept");
    tls.cookies.insert(SESSION_COOKIE.into(), id);
    assert_eq!(
        tls.get("/console/tokens").await.status,
        StatusCode::SEE_OTHER
    );
}
