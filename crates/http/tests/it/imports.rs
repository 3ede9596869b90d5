//! Importing tokens from another vault (docs/migrating.md "Importing tokens"), on both
//! backends: `POST /tokens` and `POST /tokenize` with caller-chosen ids (unique per tenant,
//! invisible across tenants, refused to `public` keys, audited as `token.imported`), and
//! `/tokenize` in the three forms Basis Theory's SDKs send. Ids beyond UUIDs and alias
//! templates are in `token_ids.rs`.

use serde_json::{json, Value};
use tessera_testkit::{api::Caller, backend_tests, db::TestDatabase};

use crate::caller::{id_of, two_tenants};

backend_tests!(
    a_chosen_id_is_kept_in_lower_case_and_read_back,
    a_chosen_id_is_unique_in_its_tenant_only,
    public_keys_cannot_choose_ids,
    ids_that_break_the_rules_are_refused_naming_the_field,
    a_bulk_import_keeps_ids_and_is_all_or_nothing,
    imports_are_audited_as_such,
    tokenize_answers_an_object_of_requests_with_an_object_of_tokens,
    tokenize_answers_one_request_with_one_token,
    bulk_calls_leave_what_single_creates_leave,
);

const ID: &str = "5C0B3E0A-9D1F-4C4B-A0B6-6A2E7C1D9F00";
const LOWER: &str = "5c0b3e0a-9d1f-4c4b-a0b6-6a2e7c1d9f00";

fn with_id(id: &str, data: &str) -> Value {
    json!({"id": id, "type": "token", "data": data, "metadata": {"source": "bt"}})
}

async fn a_chosen_id_is_kept_in_lower_case_and_read_back(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let r = admin.post("/tokens", with_id(ID, "s1")).await.expect(201);
    assert_eq!(id_of(&r.body), LOWER);
    let read = admin.get(&format!("/tokens/{ID}")).await.expect(200).body;
    assert_eq!(read["data"], json!("s1"));
    assert_eq!(read["metadata"], json!({"source": "bt"}));
    // Links made after the import work on the kept ids.
    let child = admin
        .create("/tokens", json!({"type": "token", "data": "child"}))
        .await;
    admin
        .post_empty(&format!("/tokens/{LOWER}/children/{child}"))
        .await
        .expect(204);
    let children = admin.page(&format!("/tokens/{LOWER}/children")).await;
    assert_eq!(children["pagination"]["total_items"], json!(1));
}

async fn a_chosen_id_is_unique_in_its_tenant_only(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let (in_a, in_b) = (
        Caller::new(&app, &a.admin_key),
        Caller::new(&app, &b.admin_key),
    );
    in_a.post("/tokens", with_id(ID, "a's")).await.expect(201);
    let again = in_a
        .post("/tokens", with_id(LOWER, "again"))
        .await
        .expect(409);
    assert!(!again.body.to_string().contains("a's"));
    assert_eq!(
        in_a.get(&format!("/tokens/{LOWER}")).await.expect(200).body["data"],
        json!("a's"),
        "the first token is untouched"
    );
    // Another tenant may hold the same id: it learns nothing of A's, and reads its own.
    in_b.post("/tokens", with_id(ID, "b's")).await.expect(201);
    assert_eq!(
        in_b.get(&format!("/tokens/{LOWER}")).await.expect(200).body["data"],
        json!("b's")
    );
    assert_eq!(
        in_a.get(&format!("/tokens/{LOWER}")).await.expect(200).body["data"],
        json!("a's")
    );
    // A deleted token's id may be used again.
    in_b.delete(&format!("/tokens/{LOWER}")).await.expect(204);
    in_b.post("/tokens", with_id(ID, "b's again"))
        .await
        .expect(201);
}

async fn public_keys_cannot_choose_ids(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let browser = admin
        .app_key(json!({"name": "web", "type": "public", "permissions": ["token:create"]}))
        .await;
    let public = admin.with_key(&browser);
    let r = public
        .post("/tokens", with_id(ID, "squat"))
        .await
        .expect(403);
    assert!(r.body["detail"]
        .as_str()
        .is_some_and(|d| d.contains("public key")));
    public
        .post("/tokenize", json!([with_id(ID, "squat")]))
        .await
        .expect(403);
    public
        .post(
            "/tokenize",
            json!({"type": "token", "data": "x", "id": LOWER}),
        )
        .await
        .expect(403);
    // Without an id the same key creates; the id stayed free for the import.
    public
        .post("/tokens", json!({"type": "token", "data": "ok"}))
        .await
        .expect(201);
    admin
        .post("/tokens", with_id(ID, "import"))
        .await
        .expect(201);
    let private = admin
        .app_key(json!({"name": "backend", "type": "private", "permissions": ["token:create"]}))
        .await;
    let other = "0d1f2e3c-4b5a-4978-8a6b-5c4d3e2f1a0b";
    admin
        .with_key(&private)
        .post("/tokens", with_id(other, "import"))
        .await
        .expect(201);
}

async fn ids_that_break_the_rules_are_refused_naming_the_field(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    for bad in [
        json!("{{ data | alias_preserve_formats }}"),
        json!("{{ data.missing }}"),
        json!("{% if data %}x{% endif %}"),
        json!("tk"),
        json!("a/b"),
        json!("a b"),
        json!("token:abc"),
        json!("x".repeat(401)),
        json!(""),
        json!("00000000-0000-0000-0000-000000000000"),
    ] {
        let body = json!({"id": bad, "type": "token", "data": "x"});
        admin.refuses("/tokens", body.clone(), "id").await;
        admin.refuses("/tokenize", json!([body]), "[0].id").await;
    }
    admin
        .refuses(
            "/tokens",
            json!({"id": 7, "type": "token", "data": "x"}),
            "id",
        )
        .await;
    assert_eq!(admin.total("/tokens").await, json!(0));
}

async fn a_bulk_import_keeps_ids_and_is_all_or_nothing(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let ids: Vec<String> = (0..5)
        .map(|i| format!("5c0b3e0a-9d1f-4c4b-a0b6-6a2e7c1d9f0{i}"))
        .collect();
    let batch: Vec<Value> = ids.iter().map(|id| with_id(id, id)).collect();
    let r = admin.post("/tokenize", json!(batch)).await.expect(201);
    let answered: Vec<String> = r
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(answered, ids);
    // One id repeated inside a request: 400 naming the second; one already taken: 409. Either
    // way nothing of the request is stored.
    let fresh = "6d1c4f1b-0e2a-4d5c-b1c7-7b3f8d2eaf11";
    let repeated = json!([with_id(fresh, "x"), with_id(fresh, "y")]);
    admin.refuses("/tokenize", repeated, "[1].id").await;
    let taken = json!([with_id(fresh, "x"), with_id(&ids[2], "y")]);
    admin.post("/tokenize", taken).await.expect(409);
    admin.get(&format!("/tokens/{fresh}")).await.expect(404);
    assert_eq!(admin.total("/tokens").await, json!(5));
}

async fn imports_are_audited_as_such(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    admin.post("/tokens", with_id(ID, "one")).await.expect(201);
    let other = "7e2d5a2c-1f3b-4e6d-82d8-8c4a9e3fb022";
    admin
        .post(
            "/tokenize",
            json!([with_id(other, "two"), {"type": "token", "data": "three"}]),
        )
        .await
        .expect(201);
    admin
        .post("/tokens", json!({"type": "token", "data": "generated"}))
        .await
        .expect(201);
    let events = admin.page("/audit-events?action=token.imported").await;
    let mut imported: Vec<String> = events["data"]
        .as_array()
        .expect("events")
        .iter()
        .flat_map(|e| e["resource_ids"].as_array().expect("ids").clone())
        .map(|v| v.as_str().expect("id").to_string())
        .collect();
    imported.sort();
    assert_eq!(imported, vec![LOWER.to_string(), other.to_string()]);
    let created = admin.page("/audit-events?action=token.created").await;
    assert_eq!(
        created["pagination"]["total_items"],
        json!(3),
        "every create is recorded too"
    );
}

async fn tokenize_answers_an_object_of_requests_with_an_object_of_tokens(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let card = json!({"type": "card", "data": {"number": "4242424242424242",
        "expiration_month": 12, "expiration_year": 2030}});
    let body = json!({"card": card, "ssn": {"type": "token", "data": "123-45-6789"}});
    let r = admin.post("/tokenize", body).await.expect(201);
    let answer = r.body.as_object().expect("an object");
    assert_eq!(answer.keys().collect::<Vec<_>>(), vec!["card", "ssn"]);
    assert_eq!(answer["card"]["type"], json!("card"));
    assert!(
        answer["card"].get("data").is_none(),
        "no data in the answer"
    );
    let ssn = admin
        .get(&format!("/tokens/{}", id_of(&answer["ssn"])))
        .await;
    assert_eq!(ssn.expect(200).body["data"], json!("123-45-6789"));
    // One bad member: 400 naming it, nothing stored.
    let bad = json!({"ok": {"type": "token", "data": "x"}, "card": {"type": "card", "data": {}}});
    admin.refuses("/tokenize", bad, "card.data.number").await;
    admin
        .refuses("/tokenize", json!({"first_name": null}), "first_name")
        .await;
    assert_eq!(admin.total("/tokens").await, json!(2));
}

async fn tokenize_answers_one_request_with_one_token(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let r = admin
        .post(
            "/tokenize",
            json!({"type": "token", "data": "solo", "id": ID}),
        )
        .await
        .expect(201);
    assert_eq!(id_of(&r.body), LOWER);
    assert_eq!(r.body["type"], json!("token"));
    admin
        .refuses(
            "/tokenize",
            json!({"type": "token", "data": "x", "nope": 1}),
            "nope",
        )
        .await;
}

/// 1,000 tokens made by ten bulk calls leave what 1,000 single creates of the same requests
/// leave: the same data, metadata, fingerprints and search rows, one `token.created` event per
/// call, and a chain that verifies.
async fn bulk_calls_leave_what_single_creates_leave(db: &TestDatabase) {
    let st = tessera_testkit::api::state(db, crate::caller::MIB);
    let t = tessera_testkit::api::tenant(&st, "acme").await;
    let vault = st.vault.clone();
    let app = actix_web::test::init_service(tessera_http::app(st)).await;
    let admin = Caller::new(&app, &t.admin_key);
    let request = |i: usize, container: &str| {
        json!({"type": "token", "data": {"n": i}, "containers": [container],
               "metadata": {"n": i.to_string(), "group": "g", "parity": (i % 2).to_string()}})
    };
    let mut bulk = Vec::new();
    for call in 0..10 {
        let body: Vec<Value> = (call * 100..call * 100 + 100)
            .map(|i| request(i, "/bulk/"))
            .collect();
        let answer = admin.post("/tokenize", json!(body)).await.expect(201).body;
        bulk.extend(answer.as_array().expect("array").iter().map(id_of));
    }
    let mut single = Vec::new();
    for i in 0..1000 {
        single.push(admin.create("/tokens", request(i, "/single/")).await);
    }
    for (i, (b, s)) in bulk.iter().zip(&single).enumerate() {
        let b = admin.get(&format!("/tokens/{b}")).await.expect(200).body;
        let s = admin.get(&format!("/tokens/{s}")).await.expect(200).body;
        for field in ["type", "data", "metadata", "fingerprint", "expires_at"] {
            assert_eq!(b[field], s[field], "token {i}: {field}");
        }
        assert_eq!(b["data"], json!({"n": i}));
    }
    // The search rows: every pair finds its tokens in both containers alike.
    for (pairs, each) in [
        (json!({"group": "g"}), 1000),
        (json!({"parity": "1"}), 500),
        (json!({"n": "737"}), 1),
        (json!({"n": "737", "parity": "1"}), 1),
    ] {
        for container in ["/bulk/", "/single/"] {
            let found = admin
                .post(
                    "/tokens/search?size=1",
                    json!({"metadata": pairs, "container": container}),
                )
                .await
                .expect(200)
                .body;
            assert_eq!(
                found["pagination"]["total_items"],
                json!(each),
                "{pairs} in {container}"
            );
        }
    }
    let fingerprint = admin.get(&format!("/tokens/{}", bulk[5])).await.body["fingerprint"].clone();
    let same = admin
        .post("/tokens/search", json!({"fingerprint": fingerprint}))
        .await
        .expect(200)
        .body;
    assert_eq!(
        same["pagination"]["total_items"],
        json!(2),
        "bulk and single"
    );
    for call in bulk.chunks(100) {
        let events = admin
            .get(&format!(
                "/audit-events?action=token.created&resource_id={}",
                call[0]
            ))
            .await
            .expect(200)
            .body;
        let events = events["data"].as_array().expect("events");
        assert_eq!(events.len(), 1, "one event per bulk call");
        assert_eq!(events[0]["resource_ids"], json!(call));
    }
    let report = vault.verify_audit(Some(t.tenant_id)).await.expect("verify");
    assert!(report.ok(), "{report:?}");
}
