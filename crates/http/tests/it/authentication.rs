//! Authentication on both backends: a missing, malformed or unknown key is a 401 on every
//! route, and the key is checked before the body.

use actix_web::{http::Method, test};
use serde_json::json;
use tessera_testkit::api::{send, send_raw, state, tenant};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{serve, MIB};

backend_tests!(
    missing_or_unknown_keys_are_401,
    the_key_is_checked_before_the_body
);

/// A key of the right shape that no application holds.
fn unknown_key() -> String {
    format!("key_{}", "A".repeat(32))
}

async fn missing_or_unknown_keys_are_401(db: &TestDatabase) {
    let st = state(db, MIB);
    tenant(&st, "acme").await;
    let app = serve(st).await;
    let unknown = unknown_key();
    for key in [None, Some("garbage"), Some(unknown.as_str()), Some("")] {
        for (m, uri) in [
            (Method::GET, "/tokens"),
            (Method::GET, "/applications"),
            (Method::POST, "/tokens"),
        ] {
            let body = (m == Method::POST).then(|| json!({"type": "token", "data": 1}));
            send(&app, m, uri, key, body).await.expect(401);
        }
    }
}

/// A bad body with a bad key is still a 401.
async fn the_key_is_checked_before_the_body(db: &TestDatabase) {
    let st = state(db, MIB);
    tenant(&st, "acme").await;
    let app = serve(st).await;
    let unknown = unknown_key();
    for key in [unknown.as_str(), "garbage"] {
        send_raw(&app, post_as(key, "/tokens", "text/plain", "not json"))
            .await
            .expect(401);
        send_raw(&app, post_as(key, "/applications", "application/json", "{"))
            .await
            .expect(401);
    }
}

/// `POST uri` with `key` and a raw `payload` of `content_type`.
fn post_as(
    key: &str,
    uri: &str,
    content_type: &'static str,
    payload: &'static str,
) -> test::TestRequest {
    test::TestRequest::post()
        .uri(uri)
        .insert_header(("SVC-API-KEY", key.to_string()))
        .insert_header(("content-type", content_type))
        .set_payload(payload)
}
