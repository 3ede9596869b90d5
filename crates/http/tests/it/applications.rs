//! Application management on both backends: what a created application shows, listing,
//! full-replacement updates, deletion, key regeneration, management permissions, and every
//! validation rule and malformed request.

use actix_web::{body::MessageBody, http::Method, test};
use serde_json::{json, Value};
use tessera_testkit::api::send_raw;
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{id_of, one_tenant, total, Caller, ManagementApi};

backend_tests!(
    a_created_application_shows_its_key_once,
    applications_list_in_pages_without_keys,
    put_replaces_the_whole_application,
    deleted_and_missing_applications_are_404,
    private_applications_cannot_manage_applications,
    regenerated_and_deleted_keys_stop_working_at_once,
    refused_applications_name_the_field,
    malformed_bodies_and_queries_are_refused,
);

/// Creates the "backend" application (a private one with a rule on /PCI/): its body as created.
async fn backend<S, B>(admin: Caller<'_, S>) -> Value
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let spec = json!({"name": "backend", "type": "private", "permissions": ["token:read"],
        "rules": [{"description": "pci", "priority": 1, "container": "/PCI/", "permissions": ["token:use"]}]});
    admin.post("/applications", spec).await.expect(201).body
}

async fn a_created_application_shows_its_key_once(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let b = backend(admin).await;
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

    let got = admin.page(&format!("/applications/{}", id_of(&b))).await;
    assert!(
        got.get("key").is_none(),
        "the key is shown only on create and regenerate"
    );
    assert_eq!(got["name"], json!("backend"));
}

async fn applications_list_in_pages_without_keys(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = id_of(&backend(admin).await);
    let list = admin.page("/applications?size=1&page=2").await;
    assert_eq!(
        list["pagination"],
        json!({"total_items": 2, "page_number": 2, "page_size": 1, "total_pages": 2})
    );
    assert_eq!(list["data"][0]["id"], json!(id));
    assert!(list["data"][0].get("key").is_none());
}

async fn put_replaces_the_whole_application(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let b = backend(admin).await;
    let upd = json!({"name": "renamed", "type": "public", "permissions": ["token:create"]});
    let uri = format!("/applications/{}", id_of(&b));
    let updated = admin.put(&uri, upd).await.expect(200).body;
    assert_eq!(updated["name"], json!("renamed"));
    assert_eq!(
        updated["rules"],
        json!([]),
        "PUT replaces the whole application"
    );
    assert_ne!(updated["modified_at"], updated["created_at"]);
    assert_eq!(updated["created_at"], b["created_at"]);
}

async fn deleted_and_missing_applications_are_404(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let uri = format!("/applications/{}", id_of(&backend(admin).await));
    admin.delete(&uri).await.expect(204);
    admin.get(&uri).await.expect(404);
    admin.delete(&uri).await.expect(404);
    let missing = format!("/applications/{}", uuid::Uuid::new_v4());
    let upd = json!({"name": "x", "type": "public", "permissions": ["token:create"]});
    admin.put(&missing, upd).await.expect(404);
    let regenerate = format!("{missing}/regenerate");
    admin.post_empty(&regenerate).await.expect(404);
}

/// Management permissions are checked: a private app may not manage applications.
async fn private_applications_cannot_manage_applications(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let private = admin
        .app_key(json!({"name": "p", "type": "private", "permissions": ["token:read"]}))
        .await;
    let missing = format!("/applications/{}", uuid::Uuid::new_v4());
    let spec = json!({"name": "n", "type": "private", "permissions": ["token:read"]});
    let cases = [
        (Method::GET, "/applications".to_string(), None),
        (Method::GET, missing.clone(), None),
        (
            Method::POST,
            "/applications".to_string(),
            Some(spec.clone()),
        ),
        (Method::PUT, missing.clone(), Some(spec)),
        (Method::DELETE, missing.clone(), None),
        (Method::POST, format!("{missing}/regenerate"), None),
    ];
    for (method, uri, body) in cases {
        let caller = admin.with_key(&private);
        caller.send(method, &uri, body).await.expect(403);
    }
}

async fn regenerated_and_deleted_keys_stop_working_at_once(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let spec = json!({"name": "b", "type": "private", "permissions": ["token:read"]});
    let created = admin.post("/applications", spec).await.expect(201);
    let uri = format!("/applications/{}", id_of(&created.body));
    let old = created.body["key"].as_str().expect("key").to_string();
    admin.with_key(&old).get("/tokens").await.expect(200);
    let regenerate = format!("{uri}/regenerate");
    let regen = admin.post_empty(&regenerate).await.expect(200);
    let new = regen.body["key"].as_str().expect("new key").to_string();
    assert_ne!(old, new);
    admin.with_key(&old).get("/tokens").await.expect(401);
    admin.with_key(&new).get("/tokens").await.expect(200);
    admin.delete(&uri).await.expect(204);
    admin.with_key(&new).get("/tokens").await.expect(401);
}

/// A private application named `name` with `permissions`.
fn private(name: Value, permissions: Value) -> Value {
    json!({"name": name, "type": "private", "permissions": permissions})
}

/// Application bodies that must be refused, each with the field its problem names.
fn invalid_applications() -> Vec<(Value, &'static str)> {
    let read = || json!(["token:read"]);
    vec![
        (private(json!("x".repeat(201)), read()), "name"),
        (private(json!(""), read()), "name"),
        (private(json!("a"), json!(["token:fly"])), "permissions[0]"),
        (private(json!("a"), json!(["proxy:read"])), "permissions[0]"),
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
        (private(json!(5), read()), "name"),
        (
            json!({"name": "a", "type": "private", "rules": [{"priority": 1, "container": "pci", "permissions": []}]}),
            "rules[0].container",
        ),
        (
            json!({"name": "a", "type": "private", "rules": [{"priority": 0, "container": "/pci/", "permissions": []}]}),
            "rules[0].priority",
        ),
    ]
}

async fn refused_applications_name_the_field(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    for (body, field) in invalid_applications() {
        admin.refuses("/applications", body, field).await;
    }
    // Nothing was created by any of the above.
    let list = admin.page("/applications").await;
    assert_eq!(total(&list), &json!(1));
}

async fn malformed_bodies_and_queries_are_refused(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let post = |content_type: &'static str, payload: &'static str| {
        test::TestRequest::post()
            .uri("/applications")
            .insert_header(("SVC-API-KEY", t.admin_key.as_str()))
            .insert_header(("content-type", content_type))
            .set_payload(payload)
    };
    let malformed = post("application/json", "{\"name\": ");
    let r = send_raw(&app, malformed).await.expect(400);
    assert_eq!(r.error_fields(), vec!["body"]);
    let valid = r#"{"name":"a","type":"private","permissions":["token:read"]}"#;
    send_raw(&app, post("text/plain", valid)).await.expect(415);
    for uri in [
        "/applications/not-a-uuid",
        "/applications?page=0",
        "/applications?size=101",
        "/applications?bogus=1",
    ] {
        admin.get(uri).await.expect(400);
    }
    // Nothing was created by any of the above.
    let list = admin.page("/applications").await;
    assert_eq!(total(&list), &json!(1));
}
