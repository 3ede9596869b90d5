//! Sessions: signing in (errors never a 500, no fixation, no key in a page or a log), CSRF on
//! every POST, sign-out and expiry on the server, and two tenants' sessions never crossing.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use actix_web::http::StatusCode;
use serde_json::json;
use tessera_console::SESSION_COOKIE;
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::support::{client, other_tenant, Setup};

backend_tests!(
    sign_in_errors_are_shown_never_a_500,
    every_post_needs_this_sessions_csrf_token,
    sign_in_opens_a_new_session_and_sign_out_ends_it_on_the_server,
    idle_expired_and_revoked_sessions_end,
    sessions_of_two_tenants_never_cross,
    no_key_reaches_a_page_or_the_log,
    regenerating_ones_own_key_keeps_the_session,
);

async fn sign_in_errors_are_shown_never_a_500(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let long = "k".repeat(3000);
    for (key, status, words) in [
        ("", 400, "is required"),
        ("   ", 400, "is required"),
        ("not a key", 401, "the API key is malformed"),
        (
            "key_0000000000000000000000000000000",
            401,
            "the API key is malformed",
        ),
        (
            "key_00000000000000000000000000000000",
            401,
            "unknown or has been revoked",
        ),
        ("key_ééééééééééééééééééééééééééééééé", 401, "malformed"),
        ("<script>alert(1)</script>", 401, "malformed"),
        (long.as_str(), 401, "malformed"),
    ] {
        let res = c.sign_in(key).await;
        assert_eq!(res.status.as_u16(), status, "{key:?}: {}", res.body);
        assert!(
            res.body.contains(words),
            "{key:?}: the error is on the page"
        );
        assert!(
            res.body.contains("API key") && res.body.contains("Sign in"),
            "the form again"
        );
        assert!(
            res.body.contains("aria-invalid=\"true\""),
            "next to the field"
        );
        assert!(!res.body.contains("<script>alert"), "escaped");
        assert!(
            !c.cookies.contains_key(SESSION_COOKIE),
            "no session for {key:?}"
        );
    }
    let huge = "k".repeat(10_000);
    let form = c.get("/console").await.csrf();
    let res = c
        .post("/console/sign-in", &[("csrf", &form), ("api_key", &huge)])
        .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(s.console.stored_sessions().await, 0);
}

/// Every POST route, refused without the token and with another session's, changing nothing.
async fn every_post_needs_this_sessions_csrf_token(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let token = s.card().await;
    let app = s.admin.application_id();
    let (proxy, _) = s
        .proxy(json!({"name": "p", "destination_url": s.harness.upstream_url()}))
        .await;
    let mut other = client(&s).await;
    let others = other.signed_in(&s.admin_key).await;
    let mut c = client(&s).await;
    let mine = c.signed_in(&s.admin_key).await;
    assert_ne!(mine, others);
    let routes = [
        "/console/sign-out".to_string(),
        "/console/tokens/new".into(),
        format!("/console/tokens/{token}/reveal"),
        format!("/console/tokens/{token}/edit"),
        format!("/console/tokens/{token}/delete"),
        "/console/proxies/new".into(),
        format!("/console/proxies/{proxy}"),
        format!("/console/proxies/{proxy}/try"),
        format!("/console/proxies/{proxy}/key"),
        format!("/console/proxies/{proxy}/delete"),
        "/console/applications/new".into(),
        format!("/console/applications/{app}"),
        format!("/console/applications/{app}/regenerate"),
        format!("/console/applications/{app}/delete"),
        "/console/audit/verify".into(),
    ];
    let before = s.events().await.len();
    for route in &routes {
        for form in [vec![], vec![("csrf", others.as_str())], vec![("csrf", "")]] {
            let res = c.post(route, &form).await;
            assert_eq!(res.status, StatusCode::FORBIDDEN, "{route} {form:?}");
            assert!(res.body.contains("Form refused"));
        }
    }
    assert_eq!(s.events().await.len(), before, "nothing was done");
    assert_eq!(
        c.get("/console/tokens").await.status,
        StatusCode::OK,
        "still signed in"
    );
    assert!(s
        .vault()
        .get_token(&s.admin, token.parse().expect("id"))
        .await
        .is_ok());
    // Signing in needs the token of the sign-in cookie.
    let mut fresh = client(&s).await;
    let res = fresh
        .post("/console/sign-in", &[("api_key", &s.admin_key)])
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    let _ = fresh.get("/console").await;
    let res = fresh
        .post(
            "/console/sign-in",
            &[("csrf", &mine), ("api_key", &s.admin_key)],
        )
        .await;
    assert_eq!(
        res.status,
        StatusCode::FORBIDDEN,
        "another token than the cookie's"
    );
}

async fn sign_in_opens_a_new_session_and_sign_out_ends_it_on_the_server(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    // A session id planted before sign-in is never adopted.
    c.cookies
        .insert(SESSION_COOKIE.into(), "planted-by-an-attacker".into());
    c.signed_in(&s.admin_key).await;
    let first = c.cookies[SESSION_COOKIE].clone();
    assert_ne!(first, "planted-by-an-attacker");
    // Signing in again (a sign-in form of another tab) replaces the session: the old id no
    // longer works.
    let mut tab = client(&s).await;
    let form = tab.get("/console").await.csrf();
    c.cookies.insert(
        tessera_console::SIGN_IN_COOKIE.into(),
        tab.cookies[tessera_console::SIGN_IN_COOKIE].clone(),
    );
    let again = c
        .post(
            "/console/sign-in",
            &[("csrf", &form), ("api_key", &s.admin_key)],
        )
        .await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    let second = c.cookies[SESSION_COOKIE].clone();
    assert_ne!(first, second);
    assert_eq!(
        s.console.stored_sessions().await,
        1,
        "the first session ended"
    );
    let mut replay = client(&s).await;
    replay.cookies.insert(SESSION_COOKIE.into(), first);
    assert_eq!(
        replay.get("/console/tokens").await.status,
        StatusCode::SEE_OTHER
    );

    let csrf = c.get("/console/tokens").await.csrf();
    let out = c.post("/console/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert_eq!(out.location(), "/console?signed_out=1");
    assert!(
        !c.cookies.contains_key(SESSION_COOKIE),
        "the cookie is removed"
    );
    assert_eq!(
        s.console.stored_sessions().await,
        0,
        "and the session on the server"
    );
    let mut stolen = client(&s).await;
    stolen.cookies.insert(SESSION_COOKIE.into(), second);
    let res = stolen.get("/console/tokens").await;
    assert_eq!(
        (res.status, res.location()),
        (StatusCode::SEE_OTHER, "/console")
    );
}

async fn idle_expired_and_revoked_sessions_end(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_millis(700)).await;
    let mut c = client(&s).await;
    c.signed_in(&s.admin_key).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        c.get("/console/tokens").await.status,
        StatusCode::OK,
        "activity"
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    let res = c.get("/console/tokens").await;
    assert_eq!(
        (res.status, res.location()),
        (StatusCode::SEE_OTHER, "/console?expired=1")
    );
    let page = c.get(res.location()).await;
    assert!(page.body.contains("Your session has ended"));

    // A key regenerated elsewhere ends the session at once.
    let key = s
        .key(json!({"name": "r", "type": "private", "permissions": ["token:read"]}))
        .await;
    let principal = s.vault().authenticate(Some(&key)).await.expect("principal");
    let mut c = client(&s).await;
    c.signed_in(&key).await;
    s.vault()
        .regenerate_application_key(&s.admin, principal.application_id())
        .await
        .expect("regenerate");
    let res = c.get("/console/tokens").await;
    assert_eq!(res.status, StatusCode::SEE_OTHER);
    assert_eq!(s.console.stored_sessions().await, 0);
}

async fn sessions_of_two_tenants_never_cross(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let (globex, globex_key) = other_tenant(s.vault(), "globex").await;
    let ours = s.card().await;
    let (proxy, _) = s
        .proxy(json!({"name": "acme-proxy", "destination_url": s.harness.upstream_url()}))
        .await;
    let mut a = client(&s).await;
    let a_csrf = a.signed_in(&s.admin_key).await;
    let mut b = client(&s).await;
    let b_csrf = b.signed_in(&globex_key).await;
    let b_home = b.get("/console/tokens").await;
    assert!(b_home.body.contains(&globex.tenant_id().to_string()));
    assert!(
        !b_home.body.contains(&ours),
        "another tenant's token is not listed"
    );
    for path in [
        format!("/console/tokens/{ours}"),
        format!("/console/proxies/{proxy}"),
        format!("/console/applications/{}", s.admin.application_id()),
    ] {
        let res = b.get(&path).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}");
        assert!(res.body.contains("Not found"));
    }
    let reveal = b
        .post(
            &format!("/console/tokens/{ours}/reveal"),
            &[("csrf", &b_csrf)],
        )
        .await;
    assert_eq!(reveal.status, StatusCode::NOT_FOUND);
    // One tenant's CSRF token is worthless in the other's session.
    let res = b
        .post(
            &format!("/console/tokens/{ours}/reveal"),
            &[("csrf", &a_csrf)],
        )
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    let a_home = a.get("/console/tokens").await;
    assert!(a_home.body.contains(&ours) && a_home.body.contains(&s.admin.tenant_id().to_string()));
    assert!(!a_home.body.contains(&globex.tenant_id().to_string()));
    let b_again = b.get("/console/proxies").await;
    assert!(!b_again.body.contains("acme-proxy"));
}

/// A writer the test's log lines go to.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn no_key_reaches_a_page_or_the_log(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let token = s.card().await;
    let mut c = client(&s).await;
    let mut bodies = vec![c.sign_in("key_00000000000000000000000000000000").await.body];
    let csrf = c.signed_in(&s.admin_key).await;
    for path in [
        "/console/tokens".to_string(),
        format!("/console/tokens/{token}"),
        "/console/applications".into(),
        format!("/console/applications/{}", s.admin.application_id()),
        "/console/audit".into(),
    ] {
        bodies.push(c.get(&path).await.body);
    }
    bodies.push(
        c.post(
            "/console/tokens/new",
            &[("csrf", &csrf), ("type", "token"), ("data", "x")],
        )
        .await
        .body,
    );
    let logged = String::from_utf8(log.0.lock().expect("log").clone()).expect("utf8");
    assert!(
        logged.contains("console session opened"),
        "the log was captured: {logged}"
    );
    for body in &bodies {
        assert!(!body.contains(&s.admin_key), "a page shows the key");
    }
    assert!(!logged.contains(&s.admin_key), "the log holds the key");
    assert!(
        logged.contains("console sign-in refused"),
        "a failed sign-in is logged"
    );
    assert!(
        !logged.contains("key_00000000000000000000000000000000"),
        "without the key"
    );
    assert!(
        !logged.contains(crate::support::CARD),
        "the log holds token data"
    );
}

async fn regenerating_ones_own_key_keeps_the_session(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let own = s.admin.application_id();
    let page = c
        .post(
            &format!("/console/applications/{own}/regenerate"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("the old one no longer works"));
    assert!(
        s.vault().authenticate(Some(&s.admin_key)).await.is_err(),
        "the old key is dead"
    );
    let after = c.get("/console/tokens").await;
    assert_eq!(
        after.status,
        StatusCode::OK,
        "the session now holds the new key"
    );
    assert_eq!(s.console.stored_sessions().await, 1);
}
