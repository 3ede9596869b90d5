//! `destination` (docs/api.md, "Proxy invocation", step 4): the proxy's destination URL joined with the
//! sub-path after `/proxy` and the caller's query (without `svc-proxy-key`); every method is
//! forwarded; dot segments in the sub-path are refused.

use http::Method;
use serde_json::json;
use tessera_testkit::{backend_tests, db::TestDatabase, gateway::Harness};

backend_tests!(
    the_sub_path_and_query_are_appended_to_the_destination,
    every_method_is_forwarded,
    dot_segments_in_the_sub_path_are_refused,
    dots_inside_names_are_forwarded,
    informational_and_out_of_range_statuses_are_not_relayed,
);

async fn the_sub_path_and_query_are_appended_to_the_destination(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = g
        .call_keyed(
            Method::POST,
            "/proxy/charges/ch_1?expand=x&svc-proxy-key=ignored&b=%20",
            (&pkey, &key),
            &[("content-type", "application/json")],
            r#"{"a":1}"#,
        )
        .await
        .expect(200);
    assert_eq!(r.echoed()["path"], json!("/base/charges/ch_1"));
    assert_eq!(r.echoed()["query"], json!("expand=x&b=%20"));
}

async fn every_method_is_forwarded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    for m in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        let method = Method::from_bytes(m.as_bytes()).expect("method");
        let r = g
            .call_keyed(method, "/proxy/m", (&pkey, &key), &[], "x")
            .await
            .expect(200);
        assert_eq!(r.echoed()["method"], json!(m));
    }
}

/// `/proxy/../../admin` reached the destination as
/// `/admin`, escaping the destination's path. Dot segments, raw or percent-encoded, are a 400
/// and nothing is sent.
async fn dot_segments_in_the_sub_path_are_refused(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
    ];
    let before = g.upstream.hits();
    for path in [
        "/proxy/../../admin",
        "/proxy/a/../../admin",
        "/proxy/./x",
        "/proxy/%2e%2e/%2E%2E/admin",
        "/proxy/.%2e/admin",
        "/proxy/%2e./admin",
        "/proxy/a/..%2f..%2fadmin",
        "/proxy/a/..%5c..%5cadmin",
        "/proxy/..",
        // `;` parameters and double encoding.
        "/proxy/a/..;/b",
        "/proxy/..;jsessionid=x/admin",
        "/proxy/%252e%252e/admin",
        "/proxy/a%252f..%252f..%252fadmin",
    ] {
        let r = g.call(Method::GET, path, &h, "").await.proxy_error(400);
        assert!(r.detail().contains("dot segment"), "{path}: {}", r.body);
    }
    assert_eq!(g.upstream.hits(), before, "nothing was forwarded");
}

async fn dots_inside_names_are_forwarded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = g
        .keyed(
            Method::GET,
            "/proxy/v1.2/file..txt/.well-known",
            &pkey,
            &key,
        )
        .await
        .expect(200);
    assert_eq!(
        r.echoed()["path"],
        json!("/base/v1.2/file..txt/.well-known")
    );
}

/// A destination's `101 Switching Protocols`, or a status above 599, is a
/// 502 `proxy_error`, never relayed.
async fn informational_and_out_of_range_statuses_are_not_relayed(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    for status in ["101", "600"] {
        let r = g
            .call_keyed(
                Method::GET,
                "/proxy",
                (&pkey, &key),
                &[("x-echo-status", status)],
                "",
            )
            .await
            .proxy_error(502);
        assert!(r.detail().contains(status), "{}", r.body);
    }
    // The gateway still serves on.
    g.keyed(Method::GET, "/proxy", &pkey, &key)
        .await
        .expect(200);
}
