//! Tokens on both backends: the round trip of every token type, every validation rule, and
//! lists with their pages and filters.

use actix_web::body::MessageBody;
use serde_json::{json, Value};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{id_of, one_tenant, total, Caller, ManagementApi};

backend_tests!(
    tokens_lifecycle,
    token_validation,
    token_pages_hold_every_token_once_in_creation_order,
    token_filters_combine,
    token_list_queries_are_validated,
);

async fn tokens_lifecycle(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let key = admin
        .app_key(json!({"name": "b", "type": "private",
        "permissions": ["token:create", "token:read", "token:delete"]}))
        .await;
    let caller = admin.with_key(&key);
    let cases = [
        (
            json!({"type": "token", "data": "plain string"}),
            "/general/high/",
        ),
        (
            json!({"type": "token", "data": {"nested": [1, 2, {"x": null}]}, "containers": ["/Custom/"]}),
            "/custom/",
        ),
        (
            json!({"type": "card", "data": {"number": "4242424242424242", "expiration_month": 1, "expiration_year": 2031, "cvc": "1234"}}),
            "/pci/high/",
        ),
        (
            json!({"type": "bank", "data": {"routing_number": "011000015", "account_number": "000123456789"}}),
            "/bank/high/",
        ),
    ];
    for (body, container) in cases {
        let created = caller.post("/tokens", body.clone()).await.expect(201);
        assert!(
            created.body.get("data").is_none(),
            "create never returns data"
        );
        assert_eq!(created.body["containers"], json!([container]));
        assert_eq!(created.body["tenant_id"], json!(t.tenant_id.to_string()));
        let id = id_of(&created.body);
        assert_eq!(
            uuid::Uuid::parse_str(&id).expect("uuid").get_version_num(),
            4
        );
        let uri = format!("/tokens/{id}");
        let got = caller.page(&uri).await;
        assert_eq!(got["data"], body["data"], "data round-trips exactly");
        assert_eq!(got["type"], body["type"]);
        caller.delete(&uri).await.expect(204);
        caller.get(&uri).await.expect(404);
        caller.delete(&uri).await.expect(404);
    }
    caller.get("/tokens/no").await.expect(400);
    caller.get("/tokens/not-a-uuid").await.expect(404);
    caller.delete("/tokens/no").await.expect(400);
}

/// Token bodies that must be refused, each with the field its problem names.
fn invalid_tokens() -> Vec<(Value, &'static str)> {
    let many: serde_json::Map<String, Value> =
        (0..101).map(|i| (format!("k{i}"), json!("v"))).collect();
    let with = |extra: Value| {
        let mut body = json!({"type": "token", "data": 1});
        for (key, value) in extra.as_object().expect("object") {
            body[key] = value.clone();
        }
        body
    };
    vec![
        (json!({"type": "token"}), "data"),
        (json!({"type": "token", "data": null}), "data"),
        (json!({"data": 1}), "type"),
        (json!({"type": "gold", "data": 1}), "type"),
        (
            json!({"type": "card", "data": {"number": "4242424242424241"}}),
            "data.number",
        ),
        (
            json!({"type": "card", "data": {"number": "4242424242424242", "expiration_month": 13, "expiration_year": 2030}}),
            "data.expiration_month",
        ),
        (
            json!({"type": "card", "data": {"number": "4242424242424242", "cvc": "12"}}),
            "data.cvc",
        ),
        (
            json!({"type": "bank", "data": {"routing_number": "011000016", "account_number": "1"}}),
            "data.routing_number",
        ),
        (
            json!({"type": "bank", "data": {"routing_number": "011000015", "account_number": "123456789012345678"}}),
            "data.account_number",
        ),
        (
            with(json!({"metadata": {"k": "v".repeat(501)}})),
            "metadata.k",
        ),
        (with(json!({ "metadata": many })), "metadata"),
        (with(json!({"metadata": {"k": 1}})), "metadata.k"),
        (with(json!({"containers": ["/a/", "/b/"]})), "containers"),
        (with(json!({"containers": ["no-slashes"]})), "containers[0]"),
        (with(json!({"id": "mi"})), "id"),
        (with(json!({"id": "a/b/c"})), "id"),
    ]
}

async fn token_validation(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let key = admin
        .app_key(
            json!({"name": "b", "type": "private", "permissions": ["token:create", "token:read"]}),
        )
        .await;
    let caller = admin.with_key(&key);
    for (body, field) in invalid_tokens() {
        let r = caller.refuses("/tokens", body, field).await;
        let detail = r.body["detail"].as_str().unwrap_or("");
        assert!(
            !detail.contains("4242424242424241"),
            "problem details never echo card numbers"
        );
    }
    assert_eq!(
        caller.total("/tokens").await,
        json!(0),
        "failed creates left nothing behind"
    );
}

/// Creates 45 tokens: every third a card in group "a" numbered by its index, the others
/// `token`s in group "a" when even and "b" when odd. Their ids in creation order.
async fn forty_five_tokens<S, B>(admin: Caller<'_, S>) -> Vec<String>
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let mut ids = vec![];
    for i in 0..45 {
        let body = if i % 3 == 0 {
            json!({"type": "card", "data": {"number": "4242424242424242"}, "metadata": {"group": "a", "n": i.to_string()}})
        } else {
            json!({"type": "token", "data": i, "metadata": {"group": if i % 2 == 0 { "a" } else { "b" }}})
        };
        ids.push(admin.create("/tokens", body).await);
    }
    ids
}

async fn token_pages_hold_every_token_once_in_creation_order(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let ids = forty_five_tokens(admin).await;
    let mut seen = vec![];
    for page in 1..=3 {
        let body = admin.page(&format!("/tokens?page={page}&size=20")).await;
        assert_eq!(total(&body), &json!(45));
        assert_eq!(body["pagination"]["total_pages"], json!(3));
        for item in body["data"].as_array().expect("data") {
            assert!(item.get("data").is_some(), "lists include data");
            seen.push(id_of(item));
        }
    }
    assert_eq!(seen, ids, "creation order, no duplicates, no misses");
    // Defaults: page 1, size 20.
    let first = admin.page("/tokens").await;
    assert_eq!(
        first["pagination"],
        json!({"total_items": 45, "page_number": 1, "page_size": 20, "total_pages": 3})
    );
    assert_eq!(first["data"].as_array().map(Vec::len), Some(20));
    // No matches: total_pages 0.
    let none = admin.page("/tokens?metadata.none=x").await;
    assert_eq!(
        none["pagination"],
        json!({"total_items": 0, "page_number": 1, "page_size": 20, "total_pages": 0})
    );
    assert_eq!(admin.page("/tokens?page=9").await["data"], json!([]));
}

async fn token_filters_combine(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let ids = forty_five_tokens(admin).await;
    let by_id = format!("/tokens?id={}&id={}", ids[0], ids[5]);
    for (uri, n) in [
        ("/tokens?type=card", 15),
        (
            "/tokens?type=card&type=bank&metadata.group=a&metadata.n=3",
            1,
        ),
        (by_id.as_str(), 2),
        ("/tokens?metadata.group=b&type=token", 15),
    ] {
        assert_eq!(admin.total(uri).await, json!(n), "{uri}");
    }
}

async fn token_list_queries_are_validated(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    for bad in [
        "page=0", "size=0", "size=101", "type=x", "id=1", "what=1", "page=abc",
    ] {
        admin.get(&format!("/tokens?{bad}")).await.expect(400);
    }
}
