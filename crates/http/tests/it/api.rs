//! Black-box tests of the management API: every endpoint, every status of SUPPLEMENT §1.1 that
//! applies, tenant isolation and what reaches the database. Each runs on SQLite and PostgreSQL.

use actix_web::{http::Method, test};
use serde_json::{json, Value};
use tessera_testkit::api::{app_key, send, send_raw, state, tenant};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    health_and_readiness,
    applications_lifecycle,
    regenerated_and_deleted_keys_stop_working_at_once,
    application_validation_and_malformed_input,
    authentication_failures_are_401,
    tokens_lifecycle,
    token_validation,
    token_permissions_follow_rules_and_containers,
    token_lists_filter_and_paginate,
    tenants_are_isolated,
    stored_bytes_hold_no_plaintext_and_keys_are_hashed,
    request_ids_unknown_routes_and_limits,
    nul_characters_are_a_400_on_every_backend,
);

const MIB: usize = 1024 * 1024;

async fn health_and_readiness(db: &TestDatabase) {
    let app = test::init_service(tessera_http::app(state(db, MIB))).await;
    let r = send(&app, Method::GET, "/healthz", None, None)
        .await
        .expect(200);
    assert_eq!(r.body, json!({"status": "ok"}));
    let r = send(&app, Method::GET, "/readyz", None, None)
        .await
        .expect(200);
    assert_eq!(r.body, json!({"status": "ready"}));
    // The OpenAPI document needs no key and is the generated one.
    let r = send(&app, Method::GET, "/openapi.json", None, None)
        .await
        .expect(200);
    assert_eq!(
        r.headers.get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    let generated: serde_json::Value =
        serde_json::from_str(tessera_http::openapi::json()).expect("generated document is JSON");
    assert_eq!(r.body, generated);
}

async fn applications_lifecycle(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = Some(t.admin_key.as_str());
    let spec = json!({"name": "backend", "type": "private", "permissions": ["token:read"],
        "rules": [{"description": "pci", "priority": 1, "container": "/PCI/", "permissions": ["token:use"]}]});
    let created = send(&app, Method::POST, "/applications", admin, Some(spec))
        .await
        .expect(201);
    let b = &created.body;
    let id = b["id"].as_str().expect("id").to_string();
    assert_eq!(b["tenant_id"], json!(t.tenant_id.to_string()));
    assert_eq!(b["type"], json!("private"));
    assert_eq!(
        b["rules"][0]["container"],
        json!("/pci/"),
        "containers are lowercased"
    );
    assert!(b["key"].as_str().expect("key").starts_with("key_"));
    assert_eq!(b["key"].as_str().map(str::len), Some(36));
    assert_eq!(b["created_at"], b["modified_at"]);
    assert_eq!(b["created_by"], b["modified_by"]);
    assert!(b["created_at"].as_str().expect("ts").ends_with("+00:00"));

    let got = send(
        &app,
        Method::GET,
        &format!("/applications/{id}"),
        admin,
        None,
    )
    .await
    .expect(200);
    assert!(
        got.body.get("key").is_none(),
        "the key is shown only on create and regenerate"
    );
    assert_eq!(got.body["name"], json!("backend"));

    let list = send(
        &app,
        Method::GET,
        "/applications?size=1&page=2",
        admin,
        None,
    )
    .await
    .expect(200);
    assert_eq!(
        list.body["pagination"],
        json!({"total_items": 2, "page_number": 2, "page_size": 1, "total_pages": 2})
    );
    assert_eq!(list.body["data"][0]["id"], json!(id));
    assert!(list.body["data"][0].get("key").is_none());

    let upd = json!({"name": "renamed", "type": "public", "permissions": ["token:create"]});
    let updated = send(
        &app,
        Method::PUT,
        &format!("/applications/{id}"),
        admin,
        Some(upd),
    )
    .await
    .expect(200);
    assert_eq!(updated.body["name"], json!("renamed"));
    assert_eq!(
        updated.body["rules"],
        json!([]),
        "PUT replaces the whole application"
    );
    assert_ne!(updated.body["modified_at"], updated.body["created_at"]);
    assert_eq!(updated.body["created_at"], b["created_at"]);

    send(
        &app,
        Method::DELETE,
        &format!("/applications/{id}"),
        admin,
        None,
    )
    .await
    .expect(204);
    send(
        &app,
        Method::GET,
        &format!("/applications/{id}"),
        admin,
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::DELETE,
        &format!("/applications/{id}"),
        admin,
        None,
    )
    .await
    .expect(404);
    let missing = uuid::Uuid::new_v4();
    let upd = json!({"name": "x", "type": "public", "permissions": ["token:create"]});
    send(
        &app,
        Method::PUT,
        &format!("/applications/{missing}"),
        admin,
        Some(upd),
    )
    .await
    .expect(404);
    send(
        &app,
        Method::POST,
        &format!("/applications/{missing}/regenerate"),
        admin,
        None,
    )
    .await
    .expect(404);

    // Management permissions are checked: a private app may not manage applications.
    let private = app_key(
        &app,
        &t.admin_key,
        json!({"name": "p", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    send(&app, Method::GET, "/applications", Some(&private), None)
        .await
        .expect(403);
    send(
        &app,
        Method::GET,
        &format!("/applications/{missing}"),
        Some(&private),
        None,
    )
    .await
    .expect(403);
    let spec = json!({"name": "n", "type": "private", "permissions": ["token:read"]});
    send(
        &app,
        Method::POST,
        "/applications",
        Some(&private),
        Some(spec.clone()),
    )
    .await
    .expect(403);
    send(
        &app,
        Method::PUT,
        &format!("/applications/{missing}"),
        Some(&private),
        Some(spec),
    )
    .await
    .expect(403);
    send(
        &app,
        Method::DELETE,
        &format!("/applications/{missing}"),
        Some(&private),
        None,
    )
    .await
    .expect(403);
    send(
        &app,
        Method::POST,
        &format!("/applications/{missing}/regenerate"),
        Some(&private),
        None,
    )
    .await
    .expect(403);
}

async fn regenerated_and_deleted_keys_stop_working_at_once(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = Some(t.admin_key.as_str());
    let created = send(
        &app,
        Method::POST,
        "/applications",
        admin,
        Some(json!({"name": "b", "type": "private", "permissions": ["token:read"]})),
    )
    .await
    .expect(201);
    let id = created.body["id"].as_str().expect("id").to_string();
    let old = created.body["key"].as_str().expect("key").to_string();
    send(&app, Method::GET, "/tokens", Some(&old), None)
        .await
        .expect(200);
    let regen = send(
        &app,
        Method::POST,
        &format!("/applications/{id}/regenerate"),
        admin,
        None,
    )
    .await
    .expect(200);
    let new = regen.body["key"].as_str().expect("new key").to_string();
    assert_ne!(old, new);
    send(&app, Method::GET, "/tokens", Some(&old), None)
        .await
        .expect(401);
    send(&app, Method::GET, "/tokens", Some(&new), None)
        .await
        .expect(200);
    send(
        &app,
        Method::DELETE,
        &format!("/applications/{id}"),
        admin,
        None,
    )
    .await
    .expect(204);
    send(&app, Method::GET, "/tokens", Some(&new), None)
        .await
        .expect(401);
}

async fn application_validation_and_malformed_input(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = Some(t.admin_key.as_str());
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"name": "x".repeat(201), "type": "private", "permissions": ["token:read"]}),
            "name",
        ),
        (
            json!({"name": "", "type": "private", "permissions": ["token:read"]}),
            "name",
        ),
        (
            json!({"name": "a", "type": "private", "permissions": ["token:fly"]}),
            "permissions[0]",
        ),
        (
            json!({"name": "a", "type": "private", "permissions": ["proxy:read"]}),
            "permissions[0]",
        ),
        (
            json!({"name": "a", "type": "public", "permissions": ["token:read"]}),
            "permissions[0]",
        ),
        (
            json!({"name": "a", "type": "management", "permissions": ["token:read"]}),
            "permissions[0]",
        ),
        (json!({"name": "a", "type": "private"}), "permissions"),
        (
            json!({"name": "a", "type": "root", "permissions": []}),
            "type",
        ),
        (
            json!({"name": "a", "type": "private", "permissions": ["token:read"], "extra": 1}),
            "extra",
        ),
        (
            json!({"name": 5, "type": "private", "permissions": ["token:read"]}),
            "name",
        ),
        (
            json!({"name": "a", "type": "private", "rules": [{"priority": 1, "container": "pci", "permissions": []}]}),
            "rules[0].container",
        ),
        (
            json!({"name": "a", "type": "private", "rules": [{"priority": 0, "container": "/pci/", "permissions": []}]}),
            "rules[0].priority",
        ),
    ];
    for (body, field) in cases {
        let r = send(
            &app,
            Method::POST,
            "/applications",
            admin,
            Some(body.clone()),
        )
        .await
        .expect(400);
        assert!(
            r.error_fields().iter().any(|f| f == field),
            "{body} should fail on {field}: {:?}",
            r.body
        );
    }
    let malformed = test::TestRequest::post()
        .uri("/applications")
        .insert_header(("SVC-API-KEY", t.admin_key.as_str()))
        .insert_header(("content-type", "application/json"))
        .set_payload("{\"name\": ");
    let r = send_raw(&app, malformed).await.expect(400);
    assert_eq!(r.error_fields(), vec!["body"]);
    let text = test::TestRequest::post()
        .uri("/applications")
        .insert_header(("SVC-API-KEY", t.admin_key.as_str()))
        .insert_header(("content-type", "text/plain"))
        .set_payload(r#"{"name":"a","type":"private","permissions":["token:read"]}"#);
    send_raw(&app, text).await.expect(415);
    send(&app, Method::GET, "/applications/not-a-uuid", admin, None)
        .await
        .expect(400);
    send(&app, Method::GET, "/applications?page=0", admin, None)
        .await
        .expect(400);
    send(&app, Method::GET, "/applications?size=101", admin, None)
        .await
        .expect(400);
    send(&app, Method::GET, "/applications?bogus=1", admin, None)
        .await
        .expect(400);
    // Nothing was created by any of the above.
    let list = send(&app, Method::GET, "/applications", admin, None)
        .await
        .expect(200);
    assert_eq!(list.body["pagination"]["total_items"], json!(1));
}

async fn authentication_failures_are_401(db: &TestDatabase) {
    let st = state(db, MIB);
    tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let unknown = format!("key_{}", "A".repeat(32));
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
    // The key is checked before the body: a bad body with a bad key is still a 401.
    for key in [unknown.as_str(), "garbage"] {
        let text = test::TestRequest::post()
            .uri("/tokens")
            .insert_header(("SVC-API-KEY", key))
            .insert_header(("content-type", "text/plain"))
            .set_payload("not json");
        send_raw(&app, text).await.expect(401);
        let malformed = test::TestRequest::post()
            .uri("/applications")
            .insert_header(("SVC-API-KEY", key))
            .insert_header(("content-type", "application/json"))
            .set_payload("{");
        send_raw(&app, malformed).await.expect(401);
    }
}

async fn tokens_lifecycle(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let key = app_key(
        &app,
        &t.admin_key,
        json!({"name": "b", "type": "private",
        "permissions": ["token:create", "token:read", "token:delete"]}),
    )
    .await;
    let k = Some(key.as_str());
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
        let created = send(&app, Method::POST, "/tokens", k, Some(body.clone()))
            .await
            .expect(201);
        assert!(
            created.body.get("data").is_none(),
            "create never returns data"
        );
        assert_eq!(created.body["containers"], json!([container]));
        assert_eq!(created.body["tenant_id"], json!(t.tenant_id.to_string()));
        let id = created.body["id"].as_str().expect("id").to_string();
        assert_eq!(
            uuid::Uuid::parse_str(&id).expect("uuid").get_version_num(),
            4
        );
        let got = send(&app, Method::GET, &format!("/tokens/{id}"), k, None)
            .await
            .expect(200);
        assert_eq!(got.body["data"], body["data"], "data round-trips exactly");
        assert_eq!(got.body["type"], body["type"]);
        send(&app, Method::DELETE, &format!("/tokens/{id}"), k, None)
            .await
            .expect(204);
        send(&app, Method::GET, &format!("/tokens/{id}"), k, None)
            .await
            .expect(404);
        send(&app, Method::DELETE, &format!("/tokens/{id}"), k, None)
            .await
            .expect(404);
    }
    send(&app, Method::GET, "/tokens/not-a-uuid", k, None)
        .await
        .expect(400);
    send(&app, Method::DELETE, "/tokens/not-a-uuid", k, None)
        .await
        .expect(400);
}

async fn token_validation(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let key = app_key(
        &app,
        &t.admin_key,
        json!({"name": "b", "type": "private", "permissions": ["token:create", "token:read"]}),
    )
    .await;
    let k = Some(key.as_str());
    let many: serde_json::Map<String, Value> =
        (0..101).map(|i| (format!("k{i}"), json!("v"))).collect();
    let cases: Vec<(Value, &str)> = vec![
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
            json!({"type": "token", "data": 1, "metadata": {"k": "v".repeat(501)}}),
            "metadata.k",
        ),
        (
            json!({"type": "token", "data": 1, "metadata": many}),
            "metadata",
        ),
        (
            json!({"type": "token", "data": 1, "metadata": {"k": 1}}),
            "metadata.k",
        ),
        (
            json!({"type": "token", "data": 1, "containers": ["/a/", "/b/"]}),
            "containers",
        ),
        (
            json!({"type": "token", "data": 1, "containers": ["no-slashes"]}),
            "containers[0]",
        ),
        (json!({"type": "token", "data": 1, "id": "mine"}), "id"),
    ];
    for (body, field) in cases {
        let r = send(&app, Method::POST, "/tokens", k, Some(body.clone()))
            .await
            .expect(400);
        assert!(
            r.error_fields().iter().any(|f| f == field),
            "{body} should fail on {field}: {:?}",
            r.body
        );
        let detail = r.body["detail"].as_str().unwrap_or("");
        assert!(
            !detail.contains("4242424242424241"),
            "problem details never echo card numbers"
        );
    }
    let list = send(&app, Method::GET, "/tokens", k, None)
        .await
        .expect(200);
    assert_eq!(
        list.body["pagination"]["total_items"],
        json!(0),
        "failed creates left nothing behind"
    );
}

async fn token_permissions_follow_rules_and_containers(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    // Reads everything under /pci/ except /pci/secret/; creates anywhere.
    let scoped = app_key(&app, admin, json!({"name": "s", "type": "private", "permissions": ["token:create"], "rules": [
        {"priority": 1, "container": "/pci/secret/", "permissions": ["token:create"]},
        {"priority": 2, "container": "/pci/", "permissions": ["token:create", "token:read", "token:delete"]}
    ]})).await;
    let reader = app_key(
        &app,
        admin,
        json!({"name": "r", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    let mut ids = vec![];
    for c in ["/pci/a/", "/pci/secret/", "/general/"] {
        let r = send(
            &app,
            Method::POST,
            "/tokens",
            Some(admin),
            Some(json!({"type": "token", "data": c, "containers": [c]})),
        )
        .await
        .expect(201);
        ids.push(r.body["id"].as_str().expect("id").to_string());
    }
    // The /general/ fallback comes from `permissions` (token:create only), so no read there.
    send(
        &app,
        Method::GET,
        &format!("/tokens/{}", ids[0]),
        Some(&scoped),
        None,
    )
    .await
    .expect(200);
    send(
        &app,
        Method::GET,
        &format!("/tokens/{}", ids[1]),
        Some(&scoped),
        None,
    )
    .await
    .expect(403);
    send(
        &app,
        Method::GET,
        &format!("/tokens/{}", ids[2]),
        Some(&scoped),
        None,
    )
    .await
    .expect(403);
    send(
        &app,
        Method::DELETE,
        &format!("/tokens/{}", ids[1]),
        Some(&scoped),
        None,
    )
    .await
    .expect(403);
    let list = send(&app, Method::GET, "/tokens", Some(&scoped), None)
        .await
        .expect(200);
    assert_eq!(
        list.body["pagination"]["total_items"],
        json!(1),
        "unreadable tokens are neither listed nor counted"
    );
    assert_eq!(list.body["data"][0]["id"], json!(ids[0]));
    // A reader without token:create gets 403 and nothing is stored.
    send(
        &app,
        Method::POST,
        "/tokens",
        Some(&reader),
        Some(json!({"type": "token", "data": 1})),
    )
    .await
    .expect(403);
    send(
        &app,
        Method::DELETE,
        &format!("/tokens/{}", ids[2]),
        Some(&reader),
        None,
    )
    .await
    .expect(403);
    let all = send(&app, Method::GET, "/tokens", Some(&reader), None)
        .await
        .expect(200);
    assert_eq!(all.body["pagination"]["total_items"], json!(3));
    // Create is checked against the target container.
    let only_pci = app_key(
        &app,
        admin,
        json!({"name": "c", "type": "private", "rules": [
        {"priority": 1, "container": "/pci/", "permissions": ["token:create"]}]}),
    )
    .await;
    send(
        &app,
        Method::POST,
        "/tokens",
        Some(&only_pci),
        Some(json!({"type": "token", "data": 1, "containers": ["/pci/x/"]})),
    )
    .await
    .expect(201);
    send(
        &app,
        Method::POST,
        "/tokens",
        Some(&only_pci),
        Some(json!({"type": "token", "data": 1})),
    )
    .await
    .expect(403);
    send(&app, Method::GET, "/tokens", Some(&only_pci), None)
        .await
        .expect(403);
    let all = send(&app, Method::GET, "/tokens", Some(&reader), None)
        .await
        .expect(200);
    assert_eq!(
        all.body["pagination"]["total_items"],
        json!(4),
        "the refused create stored nothing"
    );
    // A management key without token permissions cannot touch tokens.
    let manager = app_key(
        &app,
        admin,
        json!({"name": "m", "type": "management", "permissions": ["application:read"]}),
    )
    .await;
    send(
        &app,
        Method::GET,
        &format!("/tokens/{}", ids[0]),
        Some(&manager),
        None,
    )
    .await
    .expect(403);
}

async fn token_lists_filter_and_paginate(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = Some(t.admin_key.as_str());
    let mut ids = vec![];
    for i in 0..45 {
        let body = if i % 3 == 0 {
            json!({"type": "card", "data": {"number": "4242424242424242"}, "metadata": {"group": "a", "n": i.to_string()}})
        } else {
            json!({"type": "token", "data": i, "metadata": {"group": if i % 2 == 0 { "a" } else { "b" }}})
        };
        let r = send(&app, Method::POST, "/tokens", k, Some(body))
            .await
            .expect(201);
        ids.push(r.body["id"].as_str().expect("id").to_string());
    }
    let mut seen = vec![];
    for page in 1..=3 {
        let r = send(
            &app,
            Method::GET,
            &format!("/tokens?page={page}&size=20"),
            k,
            None,
        )
        .await
        .expect(200);
        assert_eq!(r.body["pagination"]["total_items"], json!(45));
        assert_eq!(r.body["pagination"]["total_pages"], json!(3));
        for item in r.body["data"].as_array().expect("data") {
            assert!(item.get("data").is_some(), "lists include data");
            seen.push(item["id"].as_str().expect("id").to_string());
        }
    }
    assert_eq!(seen, ids, "creation order, no duplicates, no misses");
    // Defaults: page 1, size 20.
    let r = send(&app, Method::GET, "/tokens", k, None)
        .await
        .expect(200);
    assert_eq!(
        r.body["pagination"],
        json!({"total_items": 45, "page_number": 1, "page_size": 20, "total_pages": 3})
    );
    assert_eq!(r.body["data"].as_array().map(Vec::len), Some(20));
    // No matches: total_pages 0.
    let r = send(&app, Method::GET, "/tokens?metadata.none=x", k, None)
        .await
        .expect(200);
    assert_eq!(
        r.body["pagination"],
        json!({"total_items": 0, "page_number": 1, "page_size": 20, "total_pages": 0})
    );
    let r = send(&app, Method::GET, "/tokens?page=9", k, None)
        .await
        .expect(200);
    assert_eq!(r.body["data"], json!([]));
    let r = send(&app, Method::GET, "/tokens?type=card", k, None)
        .await
        .expect(200);
    assert_eq!(r.body["pagination"]["total_items"], json!(15));
    let r = send(
        &app,
        Method::GET,
        "/tokens?type=card&type=bank&metadata.group=a&metadata.n=3",
        k,
        None,
    )
    .await
    .expect(200);
    assert_eq!(r.body["pagination"]["total_items"], json!(1));
    let r = send(
        &app,
        Method::GET,
        &format!("/tokens?id={}&id={}", ids[0], ids[5]),
        k,
        None,
    )
    .await
    .expect(200);
    assert_eq!(r.body["pagination"]["total_items"], json!(2));
    let r = send(
        &app,
        Method::GET,
        "/tokens?metadata.group=b&type=token",
        k,
        None,
    )
    .await
    .expect(200);
    assert_eq!(r.body["pagination"]["total_items"], json!(15));
    for bad in [
        "page=0", "size=0", "size=101", "type=x", "id=1", "what=1", "page=abc",
    ] {
        send(&app, Method::GET, &format!("/tokens?{bad}"), k, None)
            .await
            .expect(400);
    }
}

async fn tenants_are_isolated(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let created = send(
        &app,
        Method::POST,
        "/tokens",
        Some(&a.admin_key),
        Some(json!({"type": "token", "data": "a's secret"})),
    )
    .await
    .expect(201);
    let id = created.body["id"].as_str().expect("id").to_string();
    let app_a = send(
        &app,
        Method::POST,
        "/applications",
        Some(&a.admin_key),
        Some(json!({"name": "x", "type": "private", "permissions": ["token:read"]})),
    )
    .await
    .expect(201);
    let app_id = app_a.body["id"].as_str().expect("id").to_string();
    let bk = Some(b.admin_key.as_str());
    send(&app, Method::GET, &format!("/tokens/{id}"), bk, None)
        .await
        .expect(404);
    send(&app, Method::DELETE, &format!("/tokens/{id}"), bk, None)
        .await
        .expect(404);
    let list = send(&app, Method::GET, &format!("/tokens?id={id}"), bk, None)
        .await
        .expect(200);
    assert_eq!(list.body["pagination"]["total_items"], json!(0));
    send(
        &app,
        Method::GET,
        &format!("/applications/{app_id}"),
        bk,
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::DELETE,
        &format!("/applications/{app_id}"),
        bk,
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::POST,
        &format!("/applications/{app_id}/regenerate"),
        bk,
        None,
    )
    .await
    .expect(404);
    let upd = json!({"name": "stolen", "type": "private", "permissions": ["token:read"]});
    send(
        &app,
        Method::PUT,
        &format!("/applications/{app_id}"),
        bk,
        Some(upd),
    )
    .await
    .expect(404);
    let apps = send(&app, Method::GET, "/applications", bk, None)
        .await
        .expect(200);
    assert_eq!(
        apps.body["pagination"]["total_items"],
        json!(1),
        "b sees only its own admin"
    );
    // a still has everything, unchanged.
    let got = send(
        &app,
        Method::GET,
        &format!("/tokens/{id}"),
        Some(&a.admin_key),
        None,
    )
    .await
    .expect(200);
    assert_eq!(got.body["data"], json!("a's secret"));
    let got = send(
        &app,
        Method::GET,
        &format!("/applications/{app_id}"),
        Some(&a.admin_key),
        None,
    )
    .await
    .expect(200);
    assert_eq!(got.body["name"], json!("x"));
}

async fn stored_bytes_hold_no_plaintext_and_keys_are_hashed(db: &TestDatabase) {
    use sha2::{Digest, Sha256};
    use tessera_domain::store::{ApplicationStore, TokenStore};
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let secret = "SSN-078-05-1120-PLAINTEXT-MARKER";
    let r = send(
        &app,
        Method::POST,
        "/tokens",
        Some(&t.admin_key),
        Some(json!({"type": "token", "data": {"ssn": secret}})),
    )
    .await
    .expect(201);
    let id: tessera_domain::TokenId = r.body["id"].as_str().expect("id").parse().expect("uuid");
    let stored = db
        .db
        .get_token(t.tenant_id, id)
        .await
        .expect("get")
        .expect("row");
    let haystack = |bytes: &[u8], needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(
        !haystack(&stored.ciphertext, secret.as_bytes()),
        "ciphertext column holds no plaintext"
    );
    let hash: [u8; 32] = Sha256::digest(t.admin_key.as_bytes()).into();
    let by_hash = db
        .db
        .find_application_by_key_hash(&tessera_domain::ApiKeyHash::from_bytes(&hash).expect("32"))
        .await
        .expect("lookup");
    assert!(by_hash.is_some(), "the key is stored as its SHA-256");
    if let Some(path) = db.sqlite_path() {
        // Search every byte SQLite wrote: the database file and its write-ahead log.
        let mut all = std::fs::read(path).expect("db file");
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        all.extend(std::fs::read(wal).unwrap_or_default());
        assert!(
            haystack(&all, r.body["id"].as_str().expect("id").as_bytes()),
            "sanity: the token row is on disk"
        );
        assert!(
            !haystack(&all, secret.as_bytes()),
            "token plaintext never reaches the disk"
        );
        assert!(
            !haystack(&all, t.admin_key.as_bytes()),
            "API keys never reach the disk"
        );
    }
}

async fn request_ids_unknown_routes_and_limits(db: &TestDatabase) {
    let st = state(db, 1024);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let r = send_raw(
        &app,
        test::TestRequest::get()
            .uri("/healthz")
            .insert_header(("X-Request-Id", "abc-123")),
    )
    .await
    .expect(200);
    assert_eq!(
        r.headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        Some("abc-123")
    );
    let r = send(&app, Method::GET, "/healthz", None, None)
        .await
        .expect(200);
    let generated = r
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("generated id");
    assert!(uuid::Uuid::parse_str(generated).is_ok());
    let r = send(&app, Method::GET, "/no/such/route", None, None)
        .await
        .expect(404);
    assert!(r.headers.contains_key("x-request-id"));
    send(&app, Method::PATCH, "/tokens", Some(&t.admin_key), None)
        .await
        .expect(405);
    let big = json!({"type": "token", "data": "x".repeat(2048)});
    let r = send(&app, Method::POST, "/tokens", Some(&t.admin_key), Some(big))
        .await
        .expect(413);
    assert!(r.headers.contains_key("x-request-id"));
    let list = send(&app, Method::GET, "/tokens", Some(&t.admin_key), None)
        .await
        .expect(200);
    assert_eq!(list.body["pagination"]["total_items"], json!(0));
}

/// PostgreSQL cannot store NUL in text; every place where caller text is stored or searched
/// refuses it with a 400 on both backends (a 500 must be a bug, SUPPLEMENT §1.1).
async fn nul_characters_are_a_400_on_every_backend(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = Some(t.admin_key.as_str());
    let cases = [
        (
            Method::POST,
            "/applications",
            json!({"name": "a\u{0}b", "type": "private", "permissions": ["token:read"]}),
            "name",
        ),
        (
            Method::POST,
            "/tokens",
            json!({"type": "token", "data": 1, "metadata": {"k\u{0}": "v"}}),
            "metadata",
        ),
        (
            Method::POST,
            "/tokens",
            json!({"type": "token", "data": 1, "metadata": {"k": "v\u{0}"}}),
            "metadata.k",
        ),
        (
            Method::POST,
            "/proxies",
            json!({"name": "p\u{0}", "destination_url": "https://a.example.com"}),
            "name",
        ),
        (
            Method::POST,
            "/proxies",
            json!({"name": "p", "destination_url": "https://a.example.com/\u{0}"}),
            "destination_url",
        ),
        (
            Method::POST,
            "/proxies",
            json!({"name": "p", "destination_url": "https://a.example.com",
            "request_transform": {"code": "module.exports = async (r) => r; // \u{0}"}}),
            "request_transform.code",
        ),
    ];
    for (method, uri, body, field) in cases {
        let r = send(&app, method.clone(), uri, admin, Some(body))
            .await
            .expect(400);
        assert!(
            r.error_fields().contains(&field.to_string()),
            "{uri}: {:?}",
            r.body
        );
    }
    // NUL-containing text inside token data is encrypted, so it is accepted.
    send(
        &app,
        Method::POST,
        "/tokens",
        admin,
        Some(json!({"type": "token", "data": "a\u{0}b"})),
    )
    .await
    .expect(201);
    for uri in [
        "/tokens?metadata.a=%00",
        "/tokens?metadata.%00=a",
        "/proxies?name=x%00",
    ] {
        send(&app, Method::GET, uri, admin, None).await.expect(400);
    }
}
