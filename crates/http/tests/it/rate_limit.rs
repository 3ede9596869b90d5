//! Configured rate limits on the management API (docs/api.md, "Errors", 429 "where configured"):
//! per application, 429 with `Retry-After`, other credentials unaffected. (The gateway's, per
//! proxy, are tested in `tessera-gateway`.)

use crate::caller::MIB;
use actix_web::{http::Method, test};
use serde_json::json;
use tessera_domain::proxy::DestinationPolicy;
use tessera_service::rate_limit::RateLimit;
use tessera_testkit::{
    api::{app_key, send, state_with, tenant},
    backend_tests,
    db::TestDatabase,
};

backend_tests!(management_calls_are_limited_per_application);

fn limit() -> RateLimit {
    // Two at once, then one every 100 s: the test never sees a refill.
    RateLimit::new(0.01, 2.0).expect("limit")
}

async fn management_calls_are_limited_per_application(db: &TestDatabase) {
    let st = state_with(db, MIB, DestinationPolicy::default()).with_rate_limit(limit());
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    // The admin's two allowed calls: create an application, list.
    let other = app_key(
        &app,
        admin,
        json!({"name": "b", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    send(&app, Method::GET, "/applications", Some(admin), None)
        .await
        .expect(200);
    let r = send(&app, Method::GET, "/applications", Some(admin), None)
        .await
        .expect(429);
    let retry: u64 = r
        .headers
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=100).contains(&retry), "{retry}");
    // Another application has its own bucket; an unknown key is still a 401, not a 429.
    send(&app, Method::GET, "/tokens", Some(&other), None)
        .await
        .expect(200);
    send(
        &app,
        Method::GET,
        "/tokens",
        Some("key_00000000000000000000000000000000"),
        None,
    )
    .await
    .expect(401);
    // Probes are never limited.
    send(&app, Method::GET, "/healthz", None, None)
        .await
        .expect(200);
}
