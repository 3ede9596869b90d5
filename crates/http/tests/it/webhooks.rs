//! `/webhooks` on both backends (docs/webhooks.md): Basis Theory's API as its SDKs call it, at
//! most 5 per tenant (also under concurrent creates), both spellings of the permissions, no
//! escalation, tenants kept apart, receivers' URLs checked, the public signing keys, and the
//! writes audited.

use actix_web::body::MessageBody;
use serde_json::{json, Value};
use tessera_testkit::{
    api::{id_of, Caller},
    backend_tests,
    db::TestDatabase,
};

use crate::caller::{one_tenant, two_tenants, ManagementApi};

backend_tests!(
    webhooks_are_created_listed_read_replaced_and_deleted,
    a_tenant_holds_at_most_five_webhooks_even_when_created_at_once,
    both_spellings_of_the_permissions_work_and_none_escalates,
    another_tenants_webhook_is_not_found,
    receivers_must_be_https_and_public,
    unknown_event_types_and_fields_are_refused,
    the_signing_key_is_public_and_the_same_on_every_read,
    webhook_writes_are_audited,
);

fn body(url: &str, events: &[&str]) -> Value {
    json!({"name": "webhook-create", "url": url, "notify_email": "notify@example.com", "events": events})
}

async fn webhooks_are_created_listed_read_replaced_and_deleted(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let created = admin
        .post(
            "/webhooks",
            body("https://www.example.com", &["token.created"]),
        )
        .await
        .expect(201)
        .body;
    let id = id_of(&created);
    assert_eq!(created["status"], "enabled");
    assert_eq!(created["name"], "webhook-create");
    assert_eq!(created["url"], "https://www.example.com");
    assert_eq!(created["notify_email"], "notify@example.com");
    assert_eq!(created["events"], json!(["token.created"]));
    assert!(created["tenant_id"].is_string() && created["created_by"].is_string());
    assert!(created["created_at"].is_string());
    assert!(created.get("modified_at").is_none());

    let got = admin.get(&format!("/webhooks/{id}")).await.expect(200).body;
    assert_eq!(got, created);
    let page = admin.get("/webhooks").await.expect(200).body;
    assert_eq!(page["pagination"]["total_items"], 1);
    assert_eq!(id_of(&page["data"][0]), id);

    // PUT replaces; a status left out is kept, `disabled` disables.
    let replaced = admin
        .put(
            &format!("/webhooks/{id}"),
            json!({"name": "renamed", "url": "https://hooks.example.com/in", "events": ["token:deleted", "token.updated"]}),
        )
        .await
        .expect(200)
        .body;
    assert_eq!(replaced["name"], "renamed");
    assert_eq!(
        replaced["events"],
        json!(["token.deleted", "token.updated"])
    );
    assert!(replaced.get("notify_email").is_none(), "PUT replaces");
    assert_eq!(replaced["status"], "enabled");
    assert!(replaced["modified_at"].is_string() && replaced["modified_by"].is_string());
    let disabled = admin
        .put(
            &format!("/webhooks/{id}"),
            json!({"name": "renamed", "url": "https://hooks.example.com/in", "events": ["token.deleted"], "status": "disabled"}),
        )
        .await
        .expect(200)
        .body;
    assert_eq!(disabled["status"], "disabled");

    let types = admin.get("/webhooks/event-types").await.expect(200).body;
    let types = types.as_array().expect("a bare array");
    assert_eq!(types.len(), 14);
    assert!(types.contains(&json!("token.property.expired")));

    admin.delete(&format!("/webhooks/{id}")).await.expect(204);
    admin.get(&format!("/webhooks/{id}")).await.expect(404);
    admin.delete(&format!("/webhooks/{id}")).await.expect(404);
    admin.get("/webhooks/not-a-uuid").await.expect(400);
}

async fn a_tenant_holds_at_most_five_webhooks_even_when_created_at_once(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    for i in 0..5 {
        let url = format!("https://h{i}.example.com");
        admin
            .post("/webhooks", body(&url, &["token.created"]))
            .await
            .expect(201);
    }
    let sixth = admin
        .post(
            "/webhooks",
            body("https://h6.example.com", &["token.created"]),
        )
        .await
        .expect(409);
    assert!(sixth.body["detail"]
        .as_str()
        .expect("detail")
        .contains("at most 5"));
    // Another tenant's limit is its own; eight creates at once stop at five.
    let other = Caller::new(&app, &b.admin_key);
    let calls = (0..8).map(|i| {
        let url = format!("https://c{i}.example.com");
        async move {
            other
                .post("/webhooks", body(&url, &["token.created"]))
                .await
        }
    });
    let replies = futures_util::future::join_all(calls).await;
    let created = replies.iter().filter(|r| r.status.as_u16() == 201).count();
    assert_eq!(
        created,
        5,
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in &replies {
        assert!(
            matches!(r.status.as_u16(), 201 | 409),
            "{} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(
        other.get("/webhooks").await.expect(200).body["pagination"]["total_items"],
        5
    );
}

async fn both_spellings_of_the_permissions_work_and_none_escalates(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let spec = json!({"name": "hooks", "type": "management",
        "permissions": ["webhooks:create", "webhooks:read", "webhooks:update", "webhooks:delete", "audit:read"]});
    let made = admin.post("/applications", spec).await.expect(201).body;
    let mut shown: Vec<String> = serde_json::from_value(made["permissions"].clone()).expect("list");
    shown.sort();
    assert_eq!(
        shown,
        [
            "audit:read",
            "webhook:create",
            "webhook:delete",
            "webhook:read",
            "webhook:update"
        ]
    );
    let key = made["key"].as_str().expect("key").to_string();
    let hooks = Caller::new(&app, &key);
    let id = id_of(
        &hooks
            .post(
                "/webhooks",
                body("https://e.example.com", &["token.created", "token.read"]),
            )
            .await
            .expect(201)
            .body,
    );
    hooks.get(&format!("/webhooks/{id}")).await.expect(200);
    // Application and proxy events need application:read and proxy:read too.
    let refused = hooks
        .post(
            "/webhooks",
            body("https://e.example.com", &["application.created"]),
        )
        .await
        .expect(403);
    assert!(refused.body["detail"]
        .as_str()
        .expect("detail")
        .contains("application:read"));
    hooks
        .put(
            &format!("/webhooks/{id}"),
            body("https://e.example.com", &["proxy.created"]),
        )
        .await
        .expect(403);
    // Without audit:read, no event type at all.
    let spec = json!({"name": "blind", "type": "management", "permissions": ["webhook:create", "webhook:read"]});
    let blind_key = admin.post("/applications", spec).await.expect(201).body["key"]
        .as_str()
        .expect("key")
        .to_string();
    let blind = Caller::new(&app, &blind_key);
    let r = blind
        .post(
            "/webhooks",
            body("https://e.example.com", &["token.created"]),
        )
        .await
        .expect(403);
    assert!(r.body["detail"]
        .as_str()
        .expect("detail")
        .contains("audit:read"));
    blind.get("/webhooks").await.expect(200);
    blind.delete(&format!("/webhooks/{id}")).await.expect(403);
    // Without webhook:read nothing is listed; token applications cannot hold webhook permissions.
    let spec = json!({"name": "reader", "type": "management", "permissions": ["audit:read"]});
    let reader = admin.post("/applications", spec).await.expect(201).body["key"]
        .as_str()
        .expect("key")
        .to_string();
    Caller::new(&app, &reader)
        .get("/webhooks")
        .await
        .expect(403);
    Caller::new(&app, &reader)
        .get("/webhooks/event-types")
        .await
        .expect(403);
    let spec = json!({"name": "backend", "type": "private", "permissions": ["webhook:create"]});
    admin.post("/applications", spec).await.expect(400);
    // No key at all.
    Caller::anonymous(&app).get("/webhooks").await.expect(401);
}

async fn another_tenants_webhook_is_not_found(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let (a, b) = (
        Caller::new(&app, &a.admin_key),
        Caller::new(&app, &b.admin_key),
    );
    let id = id_of(
        &a.post(
            "/webhooks",
            body("https://a.example.com", &["token.created"]),
        )
        .await
        .expect(201)
        .body,
    );
    let missing = format!("/webhooks/{}", uuid::Uuid::new_v4());
    for path in [format!("/webhooks/{id}"), missing] {
        let theirs = b.get(&path).await.expect(404);
        assert_eq!(
            theirs.body["detail"], "webhook not found",
            "no existence oracle"
        );
        b.put(&path, body("https://b.example.com", &["token.created"]))
            .await
            .expect(404);
        b.delete(&path).await.expect(404);
    }
    assert_eq!(
        b.get("/webhooks").await.expect(200).body["pagination"]["total_items"],
        0
    );
    a.get(&format!("/webhooks/{id}")).await.expect(200);
}

async fn receivers_must_be_https_and_public(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    for url in [
        "http://hooks.example.com/x",
        "https://127.0.0.1/x",
        "https://10.1.2.3/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/x",
        "http://localhost:8080/x",
        "https://user:pw@hooks.example.com/x",
        "ftp://hooks.example.com/x",
        "hooks.example.com",
    ] {
        let r = admin
            .post("/webhooks", body(url, &["token.created"]))
            .await
            .expect(400);
        assert_eq!(r.error_fields(), ["url"], "{url}");
    }
}

async fn unknown_event_types_and_fields_are_refused(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    for events in [
        json!([]),
        json!(["proxy.invoked"]),
        json!(["3ds.session.created"]),
    ] {
        let b = json!({"name": "x", "url": "https://e.example.com", "events": events});
        let r = admin.post("/webhooks", b).await.expect(400);
        assert_eq!(r.error_fields(), ["events"]);
    }
    let extra = json!({"name": "x", "url": "https://e.example.com", "events": ["token.created"], "secret": "s"});
    admin.post("/webhooks", extra).await.expect(400);
    let bad_status = json!({"name": "x", "url": "https://e.example.com", "events": ["token.created"], "status": "paused"});
    admin.post("/webhooks", bad_status).await.expect(400);
}

async fn the_signing_key_is_public_and_the_same_on_every_read(db: &TestDatabase) {
    let (app, _) = one_tenant(db).await;
    let anyone = Caller::anonymous(&app);
    let first = anyone.get("/webhooks/signing-key").await;
    assert_eq!(first.status.as_u16(), 200);
    assert_eq!(
        first
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/x-pem-file")
    );
    let pem = String::from_utf8(first.raw).expect("utf-8");
    assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
    assert!(!pem.contains("PRIVATE"));
    let again = anyone.get("/webhooks/signing-key").await;
    assert_eq!(String::from_utf8(again.raw).expect("utf-8"), pem);
    let keys = anyone.get("/webhooks/signing-keys").await.body;
    assert_eq!(keys.as_array().map(Vec::len), Some(1), "{keys}");
    assert_eq!(keys[0]["version"], 1);
    assert_eq!(keys[0]["public_key"], pem.as_str());
    // Someone with write access to the database swaps the published PEM for their own: what
    // is served is still the public half of the key the custody holds.
    db.execute("UPDATE webhook_signing_keys SET public_pem = 'forged'")
        .await;
    let served = anyone.get("/webhooks/signing-key").await;
    assert_eq!(String::from_utf8(served.raw).expect("utf-8"), pem);
    let listed = anyone.get("/webhooks/signing-keys").await.body;
    assert_eq!(listed[0]["public_key"], pem.as_str());
}

async fn webhook_writes_are_audited(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = id_of(
        &admin
            .post(
                "/webhooks",
                body("https://e.example.com", &["token.created"]),
            )
            .await
            .expect(201)
            .body,
    );
    admin
        .put(
            &format!("/webhooks/{id}"),
            body("https://f.example.com", &["token.created"]),
        )
        .await
        .expect(200);
    admin.delete(&format!("/webhooks/{id}")).await.expect(204);
    let spec = json!({"name": "none", "type": "management", "permissions": ["audit:read"]});
    let key = admin.post("/applications", spec).await.expect(201).body["key"]
        .as_str()
        .expect("key")
        .to_string();
    Caller::new(&app, &key)
        .post(
            "/webhooks",
            body("https://e.example.com", &["token.created"]),
        )
        .await
        .expect(403);
    let events = audit_actions(admin, "webhook").await;
    assert_eq!(
        events,
        [
            ("webhook.created".to_string(), "denied".to_string()),
            ("webhook.deleted".to_string(), "success".to_string()),
            ("webhook.updated".to_string(), "success".to_string()),
            ("webhook.created".to_string(), "success".to_string()),
        ]
    );
}

/// The tenant's audit events whose action starts with `prefix`, newest first.
async fn audit_actions<S, B>(caller: Caller<'_, S>, prefix: &str) -> Vec<(String, String)>
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let page = caller.get("/audit-events?size=100").await.expect(200).body;
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter(|e| e["action"].as_str().is_some_and(|a| a.starts_with(prefix)))
        .map(|e| {
            (
                e["action"].as_str().unwrap_or_default().to_string(),
                e["outcome"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}
