//! Destination bindings through the API, on both backends: set on create,
//! `/tokenize` and child create, lower-cased, returned on read, list and search, searched by,
//! changed or removed with PATCH (by a reader only), and bad patterns named.

use serde_json::{json, Value};
use tessera_testkit::api::{app_key, app_with_tenant, Caller};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    bindings_are_set_on_every_create_and_returned,
    tokens_are_searched_by_binding,
    bad_patterns_are_named,
    only_a_reader_may_change_a_binding,
    patch_changes_or_removes_a_binding_and_reseals_the_data,
);

fn token(destinations: Value) -> Value {
    json!({"type": "token", "data": "sk_live_x", "destinations": destinations})
}

async fn bindings_are_set_on_every_create_and_returned(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let created = token(json!(["API.Stripe.com", "*.openai.com:443"]));
    let created = c.post("/tokens", created).await.expect(201);
    assert_eq!(
        created.body["destinations"],
        json!(["api.stripe.com", "*.openai.com:443"])
    );
    let id = created.body["id"].as_str().expect("id").to_string();
    let read = c.get(&format!("/tokens/{id}")).await.expect(200);
    assert_eq!(read.body["destinations"][0], "api.stripe.com");
    let unbound = json!({"type": "token", "data": "u"});
    let unbound = c.post("/tokens", unbound).await.expect(201);
    assert_eq!(unbound.body["destinations"], Value::Null);
    let bulk = json!([
        token(json!(["127.0.0.1:8443"])),
        token(json!(["[2001:DB8::1]"]))
    ]);
    let bulk = c.post("/tokenize", bulk).await.expect(201);
    assert_eq!(bulk.body[1]["destinations"], json!(["[2001:db8::1]"]));
    let child = token(json!(["api.stripe.com"]));
    let child = c
        .post(&format!("/tokens/{id}/children"), child)
        .await
        .expect(201);
    assert_eq!(child.body["destinations"], json!(["api.stripe.com"]));
    let list = c.get("/tokens?size=100").await.expect(200);
    assert!(list.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .any(|t| t["destinations"] == json!(["127.0.0.1:8443"])));
}

async fn tokens_are_searched_by_binding(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let id = c
        .create(
            "/tokens",
            token(json!(["API.Stripe.com", "*.openai.com:443"])),
        )
        .await;
    c.post("/tokens", json!({"type": "token", "data": "u"}))
        .await
        .expect(201);
    let child = token(json!(["api.stripe.com"]));
    c.create(&format!("/tokens/{id}/children"), child).await;
    for (destinations, total) in [
        (json!(["api.stripe.com"]), 2),
        (json!(["API.STRIPE.COM", "*.openai.com:443"]), 1),
        (json!(["openai.com"]), 0),
    ] {
        let criteria = json!({"destinations": destinations});
        let found = c.post("/tokens/search", criteria).await.expect(200);
        assert_eq!(
            found.body["pagination"]["total_items"], total,
            "{destinations}"
        );
    }
}

async fn bad_patterns_are_named(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let bad = token(json!(["ok.com", "*.com", "https://x.com"]));
    let r = c.post("/tokens", bad).await.expect(400);
    assert_eq!(r.error_fields(), vec!["destinations[1]", "destinations[2]"]);
    assert!(r.body["errors"]["destinations[1]"][0]
        .as_str()
        .expect("message")
        .contains("*.com"));
    let r = c.post("/tokens", token(json!([]))).await.expect(400);
    assert_eq!(r.error_fields(), vec!["destinations"]);
    let many: Vec<String> = (0..21).map(|i| format!("h{i}.example.com")).collect();
    c.post("/tokens", token(json!(many))).await.expect(400);
    let criteria = json!({"destinations": ["a b"]});
    let r = c.post("/tokens/search", criteria).await.expect(400);
    assert_eq!(r.error_fields(), vec!["destinations[0]"]);
}

/// Choosing where data may go is for those who may read it: a `token:update` key without
/// `token:read` cannot bind a token to its own host (and then send it there).
async fn only_a_reader_may_change_a_binding(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let k = t.admin_key.as_str();
    let id = Caller::new(&app, k)
        .create("/tokens", token(json!(["api.stripe.com"])))
        .await;
    let path = format!("/tokens/{id}");
    let updater = app_key(
        &app,
        k,
        json!({"name": "u", "type": "private", "permissions": ["token:update"]}),
    )
    .await;
    let updater = Caller::new(&app, &updater);
    let elsewhere = json!({"destinations": ["evil.example"]});
    let r = updater.patch(&path, elsewhere).await.expect(403);
    assert!(r.body["detail"]
        .as_str()
        .expect("detail")
        .contains("token:read"));
    let unbind = json!({"destinations": null});
    updater.patch(&path, unbind).await.expect(403);
    let metadata = json!({"metadata": {"a": "b"}});
    updater.patch(&path, metadata).await.expect(200);
}

async fn patch_changes_or_removes_a_binding_and_reseals_the_data(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let id = c.create("/tokens", token(json!(["api.stripe.com"]))).await;
    let path = format!("/tokens/{id}");
    let moved = json!({"destinations": ["*.stripe.com"]});
    let moved = c.patch(&path, moved).await.expect(200);
    assert_eq!(moved.body["destinations"], json!(["*.stripe.com"]));
    let read = c.get(&path).await.expect(200);
    assert_eq!(
        read.body["data"], "sk_live_x",
        "re-sealed under the new binding"
    );
    let cleared = json!({"destinations": null});
    let cleared = c.patch(&path, cleared).await.expect(200);
    assert_eq!(cleared.body["destinations"], Value::Null);
    let read = c.get(&path).await.expect(200);
    assert_eq!(read.body["data"], "sk_live_x");
}
