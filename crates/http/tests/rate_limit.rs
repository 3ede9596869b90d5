//! Configured rate limits (SUPPLEMENT §1.1, 429 "where configured"): per application on the
//! management API, per proxy on the gateway; 429 with `Retry-After`, other credentials unaffected.

mod common;

use std::sync::Arc;

use actix_web::{http::Method, test};
use bytes::Bytes;
use common::{app_key, private_gateway, private_state, send, state_with, tenant};
use serde_json::{json, Value};
use tessera_domain::{proxy::DestinationPolicy, ProxyInput};
use tessera_http::{rate_limit::RateLimit, Metrics};
use tessera_storage::{backend_tests, test_support::TestDatabase};

backend_tests!(
    management_calls_are_limited_per_application,
    proxies_are_limited_per_proxy
);

const MIB: usize = 1024 * 1024;

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

async fn proxies_are_limited_per_proxy(db: &TestDatabase) {
    let (st, t, admin) = private_state(db).await;
    let mut keys = Vec::new();
    for name in ["one", "two"] {
        // Port 1 refuses connections: a request that passes the limit answers 502.
        let input: ProxyInput = serde_json::from_value(json!({"name": name,
            "destination_url": "http://127.0.0.1:1/", "require_auth": false}))
        .expect("input");
        keys.push(
            st.vault
                .create_proxy(&admin, input)
                .await
                .expect("proxy")
                .key
                .expose()
                .clone(),
        );
    }
    let metrics = Arc::new(Metrics::new());
    let gateway = private_gateway(&st.vault, metrics.clone()).with_rate_limit(limit());
    let call = |key: &str| {
        http::Request::builder()
            .method("POST")
            .uri("/proxy")
            .header("svc-proxy-key", key)
            .body(Bytes::from_static(b"{}"))
            .expect("request")
    };
    for _ in 0..2 {
        let res = gateway.handle(call(&keys[0]), "r").await;
        assert_eq!(
            res.status(),
            502,
            "within the limit: forwarded (and refused)"
        );
    }
    let res = gateway.handle(call(&keys[0]), "r").await;
    assert_eq!(res.status(), 429);
    assert!(res.headers().contains_key("retry-after"));
    let body = http_body_util::BodyExt::collect(res.into_body())
        .await
        .expect("body")
        .to_bytes();
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(body["proxy_error"]["status"], 429);
    assert_eq!(
        gateway.handle(call(&keys[1]), "r").await.status(),
        502,
        "own bucket"
    );
    assert!(metrics
        .render()
        .contains("tessera_gateway_errors_total{reason=\"rate_limited\"} 1"));

    // On a `require_auth` proxy only authenticated calls count: the proxy key alone cannot use
    // up the callers' allowance.
    let input: ProxyInput = serde_json::from_value(json!({"name": "authed",
        "destination_url": "http://127.0.0.1:1/"}))
    .expect("input");
    let authed = st
        .vault
        .create_proxy(&admin, input)
        .await
        .expect("proxy")
        .key
        .expose()
        .clone();
    for _ in 0..5 {
        assert_eq!(gateway.handle(call(&authed), "r").await.status(), 401);
    }
    let with_key = || {
        let mut req = call(&authed);
        req.headers_mut().insert(
            "svc-api-key",
            http::HeaderValue::from_str(&t.admin_key).expect("header"),
        );
        req
    };
    for _ in 0..2 {
        assert_eq!(gateway.handle(with_key(), "r").await.status(), 502);
    }
    assert_eq!(gateway.handle(with_key(), "r").await.status(), 429);
}
