//! The gateway as `api` serves it (mounted in actix at `/proxy`): the same answers as the
//! `proxy-gateway` binary, including `Content-Length` on buffered answers (docs/api.md, "Transforms":
//! "`Content-Length` is always recomputed") and `X-Request-Id`.

use actix_web::{
    body::{BodySize, MessageBody},
    test,
};
use serde_json::json;
use tessera_testkit::{api::private_state, backend_tests, db::TestDatabase, upstream::Upstream};

use crate::caller::{proxy_post, proxy_to, with_gateway};

backend_tests!(
    buffered_answers_carry_their_length,
    a_destinations_101_is_a_502_in_api_too
);

async fn buffered_answers_carry_their_length(db: &TestDatabase) {
    let (st, _, admin) = private_state(db).await;
    let upstream = Upstream::start(None).await;
    let reshape = json!({"response_transform": {"code": "module.exports = async (req) => ({ body: { reshaped: true }, headers: { 'content-type': 'application/json' } });"}});
    let key = proxy_to(&st, &admin, &upstream, reshape).await;
    let app = with_gateway(st).await;

    // A proxy error: its body has a known size (sent with Content-Length, not chunked).
    let res = test::call_service(&app, test::TestRequest::post().uri("/proxy").to_request()).await;
    assert_eq!(res.status(), 401);
    assert!(res.headers().contains_key("x-request-id"));
    let size = res.response().body().size();
    let body = test::read_body(res).await;
    assert!(body.starts_with(br#"{"proxy_error""#));
    assert_eq!(size, BodySize::Sized(body.len() as u64));
    // A transformed answer.
    let res = test::call_service(&app, proxy_post(&key).to_request()).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()
            .get("svc-proxy-destination-status")
            .map(|v| v.as_bytes()),
        Some(&b"200"[..])
    );
    let size = res.response().body().size();
    let body = test::read_body(res).await;
    assert_eq!(&body[..], br#"{"reshaped":true}"#);
    assert_eq!(size, BodySize::Sized(body.len() as u64));
}

/// A destination's `101` (or `600`) is a 502 `proxy_error`.
async fn a_destinations_101_is_a_502_in_api_too(db: &TestDatabase) {
    let (st, _, admin) = private_state(db).await;
    let upstream = Upstream::start(None).await;
    let key = proxy_to(&st, &admin, &upstream, json!({})).await;
    let app = with_gateway(st).await;
    for status in ["101", "600"] {
        let res = test::call_service(
            &app,
            test::TestRequest::get()
                .uri("/proxy")
                .insert_header(("svc-proxy-key", key.as_str()))
                .insert_header(("x-echo-status", status))
                .to_request(),
        )
        .await;
        assert_eq!(res.status(), 502, "{status}");
        assert!(!res.headers().contains_key("upgrade"));
        let body = test::read_body(res).await;
        assert!(body.starts_with(br#"{"proxy_error""#));
    }
}
