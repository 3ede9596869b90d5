//! Destination bindings through the API (issue 27), on both backends: set on create,
//! `/tokenize` and child create, lower-cased, returned on read, list and search, searched by,
//! changed or removed with PATCH (by a reader only), and bad patterns named.

use actix_web::{http::Method, test};
use serde_json::{json, Value};
use tessera_testkit::api::{app_key, send, state, tenant};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    bindings_are_set_returned_and_searched,
    bad_patterns_are_named,
    patch_changes_or_removes_a_binding_for_readers_only,
);

const MIB: usize = 1024 * 1024;

fn token(destinations: Value) -> Value {
    json!({"type": "token", "data": "sk_live_x", "destinations": destinations})
}

async fn bindings_are_set_returned_and_searched(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let created = send(
        &app,
        Method::POST,
        "/tokens",
        Some(k),
        Some(token(json!(["API.Stripe.com", "*.openai.com:443"]))),
    )
    .await
    .expect(201);
    assert_eq!(
        created.body["destinations"],
        json!(["api.stripe.com", "*.openai.com:443"])
    );
    let id = created.body["id"].as_str().expect("id").to_string();
    let read = send(&app, Method::GET, &format!("/tokens/{id}"), Some(k), None)
        .await
        .expect(200);
    assert_eq!(read.body["destinations"][0], "api.stripe.com");
    let unbound = send(
        &app,
        Method::POST,
        "/tokens",
        Some(k),
        Some(json!({"type": "token", "data": "u"})),
    )
    .await
    .expect(201);
    assert_eq!(unbound.body["destinations"], Value::Null);
    let bulk = send(
        &app,
        Method::POST,
        "/tokenize",
        Some(k),
        Some(json!([
            token(json!(["127.0.0.1:8443"])),
            token(json!(["[2001:DB8::1]"]))
        ])),
    )
    .await
    .expect(201);
    assert_eq!(bulk.body[1]["destinations"], json!(["[2001:db8::1]"]));
    let child = send(
        &app,
        Method::POST,
        &format!("/tokens/{id}/children"),
        Some(k),
        Some(token(json!(["api.stripe.com"]))),
    )
    .await
    .expect(201);
    assert_eq!(child.body["destinations"], json!(["api.stripe.com"]));

    let search = |criteria: Value| {
        let app = &app;
        async move {
            send(app, Method::POST, "/tokens/search", Some(k), Some(criteria))
                .await
                .expect(200)
                .body["pagination"]["total_items"]
                .as_u64()
                .expect("count")
        }
    };
    assert_eq!(search(json!({"destinations": ["api.stripe.com"]})).await, 2);
    assert_eq!(
        search(json!({"destinations": ["API.STRIPE.COM", "*.openai.com:443"]})).await,
        1
    );
    assert_eq!(search(json!({"destinations": ["openai.com"]})).await, 0);
    let list = send(&app, Method::GET, "/tokens?size=100", Some(k), None)
        .await
        .expect(200);
    assert!(list.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .any(|t| t["destinations"] == json!(["127.0.0.1:8443"])));
}

async fn bad_patterns_are_named(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let r = send(
        &app,
        Method::POST,
        "/tokens",
        Some(k),
        Some(token(json!(["ok.com", "*.com", "https://x.com"]))),
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["destinations[1]", "destinations[2]"]);
    assert!(r.body["errors"]["destinations[1]"][0]
        .as_str()
        .expect("message")
        .contains("*.com"));
    let r = send(
        &app,
        Method::POST,
        "/tokens",
        Some(k),
        Some(token(json!([]))),
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["destinations"]);
    let many: Vec<String> = (0..21).map(|i| format!("h{i}.example.com")).collect();
    send(
        &app,
        Method::POST,
        "/tokens",
        Some(k),
        Some(token(json!(many))),
    )
    .await
    .expect(400);
    let r = send(
        &app,
        Method::POST,
        "/tokens/search",
        Some(k),
        Some(json!({"destinations": ["a b"]})),
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["destinations[0]"]);
}

/// Choosing where data may go is for those who may read it: a `token:update` key without
/// `token:read` cannot bind a token to its own host (and then send it there).
async fn patch_changes_or_removes_a_binding_for_readers_only(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let id = send(
        &app,
        Method::POST,
        "/tokens",
        Some(k),
        Some(token(json!(["api.stripe.com"]))),
    )
    .await
    .expect(201)
    .body["id"]
        .as_str()
        .expect("id")
        .to_string();
    let path = format!("/tokens/{id}");
    let updater = app_key(
        &app,
        k,
        json!({"name": "u", "type": "private", "permissions": ["token:update"]}),
    )
    .await;
    let r = send(
        &app,
        Method::PATCH,
        &path,
        Some(&updater),
        Some(json!({"destinations": ["evil.example"]})),
    )
    .await
    .expect(403);
    assert!(r.body["detail"]
        .as_str()
        .expect("detail")
        .contains("token:read"));
    send(
        &app,
        Method::PATCH,
        &path,
        Some(&updater),
        Some(json!({"destinations": null})),
    )
    .await
    .expect(403);
    send(
        &app,
        Method::PATCH,
        &path,
        Some(&updater),
        Some(json!({"metadata": {"a": "b"}})),
    )
    .await
    .expect(200);
    let moved = send(
        &app,
        Method::PATCH,
        &path,
        Some(k),
        Some(json!({"destinations": ["*.stripe.com"]})),
    )
    .await
    .expect(200);
    assert_eq!(moved.body["destinations"], json!(["*.stripe.com"]));
    let read = send(&app, Method::GET, &path, Some(k), None)
        .await
        .expect(200);
    assert_eq!(
        read.body["data"], "sk_live_x",
        "re-sealed under the new binding"
    );
    let cleared = send(
        &app,
        Method::PATCH,
        &path,
        Some(k),
        Some(json!({"destinations": null})),
    )
    .await
    .expect(200);
    assert_eq!(cleared.body["destinations"], Value::Null);
    let read = send(&app, Method::GET, &path, Some(k), None)
        .await
        .expect(200);
    assert_eq!(read.body["data"], "sk_live_x");
}
