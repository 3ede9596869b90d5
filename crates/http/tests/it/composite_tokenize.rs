//! `POST /tokenize` as Basis Theory's `tokenize` takes it (docs/api.md, "`POST /tokenize`"),
//! on both backends: bare values become `token`s answered by their ids, token requests are
//! answered by their tokens, arrays and objects keep their shape; all or nothing; the limit
//! counts every token; depth is bounded.

use serde_json::{json, Value};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{one_tenant, Caller};

backend_tests!(
    bare_values_and_requests_come_back_in_the_bodys_shape,
    a_composite_body_is_all_or_nothing_and_counts_every_token,
);

async fn bare_values_and_requests_come_back_in_the_bodys_shape(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let body = json!({
        "first_name": "John",
        "age": 42,
        "primary_card": {"type": "card", "data": {"number": "4242424242424242",
            "expiration_month": 12, "expiration_year": 2030}},
        "sensitive_tags": ["preferred", {"type": "token", "data": "vip"}],
    });
    let answer = admin.post("/tokenize", body).await.expect(201).body;
    let first = answer["first_name"].as_str().expect("an id");
    let read = admin
        .get(&format!("/tokens/{first}"))
        .await
        .expect(200)
        .body;
    assert_eq!(
        (read["type"].clone(), read["data"].clone()),
        (json!("token"), json!("John"))
    );
    let age = answer["age"].as_str().expect("an id");
    let read = admin.get(&format!("/tokens/{age}")).await.expect(200).body;
    assert_eq!(read["data"], json!(42), "a number stays a number");
    assert_eq!(answer["primary_card"]["type"], json!("card"));
    assert!(
        answer["primary_card"].get("data").is_none(),
        "a write's answer, as ever"
    );
    assert_eq!(answer["primary_card"]["containers"], json!(["/pci/high/"]));
    let tags = answer["sensitive_tags"].as_array().expect("array");
    assert!(tags[0].is_string());
    assert_eq!(tags[1]["type"], json!("token"));
    assert_eq!(admin.total("/tokens").await, json!(5));
    // A bare value alone, and an array mixing both.
    let one = admin
        .post("/tokenize", json!("alone"))
        .await
        .expect(201)
        .body;
    assert!(one.is_string(), "{one}");
    let mixed = admin
        .post("/tokenize", json!([true, {"type": "token", "data": 1}]))
        .await
        .expect(201)
        .body;
    assert!(
        mixed[0].is_string() && mixed[1]["id"].is_string(),
        "{mixed}"
    );
}

async fn a_composite_body_is_all_or_nothing_and_counts_every_token(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let bad = json!({"name": "kept?", "cards": ["x", {"type": "card", "data": {"number": "1"}}]});
    admin
        .refuses("/tokenize", bad, "cards[1].data.number")
        .await;
    admin
        .refuses("/tokenize", json!({"name": null}), "name")
        .await;
    assert_eq!(admin.total("/tokens").await, json!(0), "nothing stored");
    // 101 tokens however they nest.
    let many: Vec<Value> = (0..50)
        .map(|i| json!([i, {"type": "token", "data": i}]))
        .collect();
    let mut body = json!({"list": many});
    body["one_more"] = json!("x");
    admin.refuses("/tokenize", body, "body").await;
    let mut deep = json!("x");
    for _ in 0..8 {
        deep = json!({"a": deep});
    }
    let refused = admin.post("/tokenize", deep).await.expect(400);
    assert!(
        refused.error_fields()[0].starts_with("a.a.a.a.a.a.a.a"),
        "{:?}",
        refused.body
    );
    assert_eq!(admin.total("/tokens").await, json!(0));
}
