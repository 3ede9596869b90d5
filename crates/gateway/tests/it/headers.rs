//! Which headers cross the gateway (docs/api.md, "Proxy invocation"): the caller's headers reach the
//! destination except `SVC-*` and hop-by-hop ones (including those `Connection` lists); `Host`
//! comes from the destination; `X-Request-Id` is forwarded and echoed (or the destination's own
//! passes through), and without one an `SVC-TRACE-ID` stands for it; the answer carries
//! `SVC-PROXY-DESTINATION-STATUS`.

use http::Method;
use serde_json::json;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Reply},
};

backend_tests!(
    destination_auth_and_custom_headers_are_forwarded,
    svc_headers_are_not_forwarded,
    connection_listed_headers_are_not_forwarded,
    host_comes_from_the_destination,
    the_callers_request_id_reaches_the_destination_and_is_echoed,
    the_destinations_request_id_passes_through,
    the_destination_status_is_in_a_header,
    an_svc_trace_id_is_the_request_id_when_there_is_no_x_request_id,
);

/// A POST through a plain proxy carrying destination auth, a custom header, a
/// `Connection`-listed header, an extra `svc-*` header and a request id.
async fn forwarded(g: &Harness) -> Reply {
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    g.call_keyed(
        Method::POST,
        "/proxy/charges/ch_1",
        (&pkey, &key),
        &[
            ("authorization", "Bearer dest-token"),
            ("x-custom", "kept"),
            ("connection", "x-hop"),
            ("x-hop", "dropped"),
            ("svc-other", "dropped"),
            ("x-request-id", "req-123"),
            ("content-type", "application/json"),
        ],
        r#"{"a":1}"#,
    )
    .await
    .expect(200)
}

/// `GET /proxy` through the proxy `pkey` with the API key `key` and `headers`: the 200 answer.
async fn get_through(g: &Harness, (pkey, key): (&str, &str), headers: &[(&str, &str)]) -> Reply {
    g.call_keyed(Method::GET, "/proxy", (pkey, key), headers, "")
        .await
        .expect(200)
}

async fn destination_auth_and_custom_headers_are_forwarded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = forwarded(&g).await;
    let h = &r.echoed()["headers"];
    assert_eq!(
        h["authorization"],
        json!("Bearer dest-token"),
        "caller's destination auth is forwarded"
    );
    assert_eq!(h["x-custom"], json!("kept"));
}

async fn svc_headers_are_not_forwarded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = forwarded(&g).await;
    let h = &r.echoed()["headers"];
    for stripped in ["svc-proxy-key", "svc-api-key", "svc-other"] {
        assert!(
            h.get(stripped).is_none(),
            "{stripped} must not be forwarded"
        );
    }
}

async fn connection_listed_headers_are_not_forwarded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = forwarded(&g).await;
    let h = &r.echoed()["headers"];
    assert!(h.get("x-hop").is_none(), "x-hop must not be forwarded");
}

async fn host_comes_from_the_destination(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = forwarded(&g).await;
    assert_eq!(
        r.echoed()["headers"]["host"],
        json!(format!("127.0.0.1:{}", g.upstream.addr.port())),
        "Host comes from the destination"
    );
}

async fn the_callers_request_id_reaches_the_destination_and_is_echoed(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = forwarded(&g).await;
    assert_eq!(
        r.echoed()["headers"]["x-request-id"],
        json!("req-123"),
        "the caller's request id reaches the destination"
    );
    assert_eq!(r.header("x-request-id"), Some("req-123"));
}

async fn the_destinations_request_id_passes_through(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = get_through(&g, (&pkey, &key), &[("x-echo-request-id", "1")]).await;
    assert_eq!(
        r.header("x-request-id"),
        Some("upstream-id"),
        "the destination's own id passes through"
    );
}

async fn the_destination_status_is_in_a_header(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = forwarded(&g).await;
    assert_eq!(r.header("svc-proxy-destination-status"), Some("200"));
}

/// What Basis Theory's SDKs send as their correlation id is the request id: forwarded as
/// `X-Request-Id` and echoed, but not forwarded itself (an `SVC-*` header). An `X-Request-Id`
/// still wins.
async fn an_svc_trace_id_is_the_request_id_when_there_is_no_x_request_id(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = get_through(&g, (&pkey, &key), &[("svc-trace-id", "trace-7")]).await;
    assert_eq!(r.echoed()["headers"]["x-request-id"], json!("trace-7"));
    assert!(r.echoed()["headers"].get("svc-trace-id").is_none());
    assert_eq!(r.header("x-request-id"), Some("trace-7"));
    let both = [("svc-trace-id", "trace-7"), ("x-request-id", "req-7")];
    let r = get_through(&g, (&pkey, &key), &both).await;
    assert_eq!(r.header("x-request-id"), Some("req-7"));
}
