//! Sessions as stored: shared by replicas (another console over the same database serves and
//! ends them), holding neither the session id nor a usable key, refused when a request carries
//! two session cookies (one planted), pruned when ended; and failed sign-ins throttled per
//! client address.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use tessera_console::SESSION_COOKIE;
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::support::{client, client_of, Setup};

backend_tests!(
    a_second_replica_serves_and_ends_the_same_session,
    the_store_holds_no_session_id_and_no_usable_key,
    two_session_cookies_sign_the_browser_out,
    ended_sessions_are_pruned,
    a_session_written_into_the_database_opens_nothing,
    failed_sign_ins_are_throttled_per_client,
);

async fn a_second_replica_serves_and_ends_the_same_session(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let other = s.replica(db);
    let mut a = client(&s).await;
    a.signed_in(&s.admin_key).await;
    let mut b = client_of(&other).await;
    b.cookies = a.cookies.clone();
    let page = b.get("/console/tokens").await;
    assert_eq!(
        page.status,
        StatusCode::OK,
        "the other replica knows the session"
    );
    // A form of one replica is accepted by the other: the CSRF token is the session's.
    let csrf = a.get("/console/tokens").await.csrf();
    let out = b.post("/console/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    let res = a.get("/console/tokens").await;
    assert_eq!(
        (res.status, res.location()),
        (StatusCode::SEE_OTHER, "/console"),
        "signed out on one replica, out on every one at once"
    );
}

async fn the_store_holds_no_session_id_and_no_usable_key(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    c.signed_in(&s.admin_key).await;
    let id = c.cookies[SESSION_COOKIE].clone();
    assert_eq!(s.console.stored_sessions().await, 1);
    let stored = db.stored_bytes().await;
    let find = |needle: &[u8]| stored.windows(needle.len()).any(|w| w == needle);
    assert!(!find(id.as_bytes()), "the session id is not stored");
    assert!(!find(s.admin_key.as_bytes()), "nor the key in clear");
}

async fn two_session_cookies_sign_the_browser_out(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut attacker = client(&s).await;
    attacker.signed_in(&s.admin_key).await;
    let planted = attacker.cookies[SESSION_COOKIE].clone();
    let mut victim = client(&s).await;
    victim.signed_in(&s.admin_key).await;
    let own = victim.cookies[SESSION_COOKIE].clone();
    // The planted cookie on a narrower path comes first, as a browser sends it.
    victim.cookies.clear();
    victim.headers.push((
        header::COOKIE.to_string(),
        format!("{SESSION_COOKIE}={planted}; {SESSION_COOKIE}={own}"),
    ));
    let res = victim.get("/console/tokens/new").await;
    assert_eq!(
        (res.status, res.location()),
        (StatusCode::SEE_OTHER, "/console?expired=1")
    );
    let cleared: Vec<_> = res
        .set_cookies()
        .into_iter()
        .filter(|c| c.name() == SESSION_COOKIE)
        .filter(|c| c.max_age() == Some(actix_web::cookie::time::Duration::ZERO))
        .filter_map(|c| c.path().map(str::to_string))
        .collect();
    for path in ["/console", "/console/tokens/new"] {
        assert!(cleared.iter().any(|p| p == path), "{path}: {cleared:?}");
    }
    assert_eq!(s.console.stored_sessions().await, 0, "both sessions ended");
    victim.headers.clear();
    for id in [planted, own] {
        victim.cookies.insert(SESSION_COOKIE.into(), id);
        assert_eq!(
            victim.get("/console/tokens").await.status,
            StatusCode::SEE_OTHER
        );
    }
}

async fn ended_sessions_are_pruned(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_millis(300)).await;
    for _ in 0..3 {
        client(&s).await.signed_in(&s.admin_key).await;
    }
    assert_eq!(s.console.stored_sessions().await, 3);
    assert_eq!(
        s.console.prune_sessions().await.expect("prune"),
        0,
        "all live"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.console.prune_sessions().await.expect("prune"), 3);
    assert_eq!(s.console.stored_sessions().await, 0);
}

async fn failed_sign_ins_are_throttled_per_client(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let wrong = "key_00000000000000000000000000000000";
    for _ in 0..10 {
        assert_eq!(c.sign_in(wrong).await.status, StatusCode::UNAUTHORIZED);
    }
    let res = c.sign_in(&s.admin_key).await;
    assert_eq!(
        res.status,
        StatusCode::TOO_MANY_REQUESTS,
        "refused before the key is looked at: {}",
        res.body
    );
    assert!(res.headers.contains_key(header::RETRY_AFTER));
    assert!(!c.cookies.contains_key(SESSION_COOKIE));
    let mut elsewhere = client(&s).await;
    elsewhere.peer = "127.0.0.2:40000".parse().expect("addr");
    elsewhere.signed_in(&s.admin_key).await;
    // A forwarded address is believed only from a trusted proxy: this client cannot escape
    // its count by naming another address.
    c.headers
        .push(("x-forwarded-for".to_string(), "198.51.100.7".to_string()));
    assert_eq!(
        c.sign_in(&s.admin_key).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// Someone with write access to the database copies a live session's row under an id of their
/// own choosing (its hash is all a row holds): the sealed key is bound to the row it was sealed
/// for, so the copy is no session.
async fn a_session_written_into_the_database_opens_nothing(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut victim = client(&s).await;
    victim.signed_in(&s.admin_key).await;
    let chosen = "chosen-by-someone-with-database-access";
    let hash: String = tessera_domain::vault::session_id_hash(chosen)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let literal = if db.sqlite_path().is_some() {
        format!("X'{hash}'")
    } else {
        format!("decode('{hash}', 'hex')")
    };
    db.execute(&format!(
        "INSERT INTO console_sessions \
         SELECT {literal}, tenant_id, application_id, key_hash, key_sealed, created_at, last_seen_at \
         FROM console_sessions"
    ))
    .await;
    assert_eq!(s.console.stored_sessions().await, 2);
    let mut forger = client(&s).await;
    forger.cookies.insert(SESSION_COOKIE.into(), chosen.into());
    let res = forger.get("/console/tokens").await;
    assert_eq!(
        (res.status, res.location()),
        (StatusCode::SEE_OTHER, "/console?expired=1"),
        "{}",
        res.body
    );
    assert_eq!(
        s.console.stored_sessions().await,
        1,
        "the forged row is gone"
    );
    assert_eq!(
        victim.get("/console/tokens").await.status,
        StatusCode::OK,
        "the real session goes on"
    );
}
