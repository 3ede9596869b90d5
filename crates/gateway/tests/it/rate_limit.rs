//! Configured rate limits on the gateway (docs/api.md, "Errors", 429 "where configured"): per proxy,
//! 429 `proxy_error` with `Retry-After`; on `require_auth` proxies only authenticated calls
//! count.

use serde_json::{json, Value};
use tessera_domain::ProxyInput;
use tessera_service::{metrics::Registry, rate_limit::RateLimit};
use tessera_testkit::{
    api::private_state,
    backend_tests,
    db::TestDatabase,
    gateway::{self, request, Options},
};

backend_tests!(proxies_are_limited_per_proxy);

fn limit() -> RateLimit {
    // Two at once, then one every 100 s: the test never sees a refill.
    RateLimit::new(0.01, 2.0).expect("limit")
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
    let registry = Registry::new();
    let options = Options {
        rate_limit: Some(limit()),
        ..Options::default()
    };
    let gateway = gateway::build(&st.vault, &options, &registry);
    let call = |key: &str| request("POST", "/proxy", &[("svc-proxy-key", key)], "{}");
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
    assert!(registry
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
        request(
            "POST",
            "/proxy",
            &[("svc-proxy-key", &authed), ("svc-api-key", &t.admin_key)],
            "{}",
        )
    };
    for _ in 0..2 {
        assert_eq!(gateway.handle(with_key(), "r").await.status(), 502);
    }
    assert_eq!(gateway.handle(with_key(), "r").await.status(), 429);
}
