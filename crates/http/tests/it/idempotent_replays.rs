//! An idempotent request is kept only as a keyed hash, and a replay
//! is answered only to a caller that passes the first request's permission checks again. On
//! both backends.

use actix_web::test::TestRequest;
use serde_json::json;
use sha2::{Digest, Sha256};
use tessera_testkit::api::{app_key, app_with_tenant, application_id as app_id, send_raw, Caller};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    a_replay_after_the_permission_was_revoked_is_refused,
    a_replay_needs_the_container_grants_of_the_first_request,
    the_stored_request_hash_is_keyed,
    a_bodiless_retry_of_a_key_creation_answers_the_first_key,
);

/// The finding as reported: after `application:create` was revoked, a replay still returned
/// the stored 201 with the minted API key. Now it is a 403, recorded as a denial.
async fn a_replay_after_the_permission_was_revoked_is_refused(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = t.admin_key.as_str();
    let minter = app_key(
        &app,
        admin,
        json!({"name": "minter", "type": "management", "permissions": ["application:create", "application:read"]}),
    )
    .await;
    let body = json!({"name": "child", "type": "management", "permissions": ["application:read"]});
    let first = Caller::new(&app, &minter)
        .post_once("/applications", &body, "mint-1")
        .await
        .expect(201);
    assert!(first.body["key"].is_string());
    let replayed = Caller::new(&app, &minter)
        .post_once("/applications", &body, "mint-1")
        .await
        .expect(201);
    assert_eq!(
        replayed
            .headers
            .get("idempotent-replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    assert_eq!(replayed.body["key"], first.body["key"]);

    let minter_id = app_id(&app, admin, "minter").await;
    let as_admin = Caller::new(&app, admin);
    let revoked =
        json!({"name": "minter", "type": "management", "permissions": ["application:read"]});
    as_admin
        .put(&format!("/applications/{minter_id}"), revoked)
        .await
        .expect(200);
    let refused = Caller::new(&app, &minter)
        .post_once("/applications", &body, "mint-1")
        .await
        .expect(403);
    assert!(refused.body.get("key").is_none());
    assert!(
        !String::from_utf8_lossy(&refused.raw).contains(first.body["key"].as_str().expect("key"))
    );
    let trail = as_admin
        .get("/audit-events?outcome=denied")
        .await
        .expect(200);
    let denied = &trail.body["data"][0];
    assert_eq!(denied["action"], "application.created");
    assert_eq!(denied["actor"], minter_id.as_str());
}

/// A token create's replay needs `token:create` on the container the token went to.
async fn a_replay_needs_the_container_grants_of_the_first_request(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = t.admin_key.as_str();
    let writer = app_key(
        &app,
        admin,
        json!({"name": "w", "type": "private", "permissions": ["token:create"]}),
    )
    .await;
    let body = json!({"type": "token", "data": "x", "containers": ["/pci/low/"]});
    Caller::new(&app, &writer)
        .post_once("/tokens", &body, "t-1")
        .await
        .expect(201);
    let id = app_id(&app, admin, "w").await;
    let no_pci = json!({"name": "w", "type": "private", "permissions": ["token:create"],
        "rules": [{"priority": 1, "container": "/pci/", "permissions": []}]});
    Caller::new(&app, admin)
        .put(&format!("/applications/{id}"), no_pci)
        .await
        .expect(200);
    let r = Caller::new(&app, &writer)
        .post_once("/tokens", &body, "t-1")
        .await
        .expect(403);
    assert!(r.body["detail"]
        .as_str()
        .unwrap_or_default()
        .contains("/pci/low/"));
}

/// A database copy holds no plain hash of a request body (which may hold a card number).
async fn the_stored_request_hash_is_keyed(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = t.admin_key.as_str();
    let body = json!({"type": "card", "data": {"number": "4242424242424242"}});
    let raw = serde_json::to_vec(&body).expect("json");
    Caller::new(&app, admin)
        .post_once("/tokens", &body, "card-1")
        .await
        .expect(201);
    let mut plain = Sha256::new();
    for part in [&b"POST"[..], b"/tokens", b"", &raw] {
        plain.update((part.len() as u64).to_be_bytes());
        plain.update(part);
    }
    let unkeyed: [u8; 32] = plain.finalize().into();
    let stored = db.stored_bytes().await;
    assert!(
        !stored.windows(32).any(|w| w == unkeyed),
        "the plain SHA-256 of the request is on disk"
    );
    assert!(!stored.windows(16).any(|w| w == b"4242424242424242"));
}

/// `POST /applications/{id}/keys` and `/regenerate` as the SDKs send them: no body, no
/// `Content-Type`, with `Idempotency-Key` or its prefixed alias. A retry after a lost answer
/// answers the first key; it never mints a second one that nobody holds.
async fn a_bodiless_retry_of_a_key_creation_answers_the_first_key(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = t.admin_key.as_str();
    let spec = json!({"name": "svc", "type": "private", "permissions": ["token:read"]});
    app_key(&app, admin, spec).await;
    let id = app_id(&app, admin, "svc").await;
    let bodiless = |path: &str, header: &'static str, key: &'static str| {
        TestRequest::post()
            .uri(path)
            .insert_header(("SVC-API-KEY", admin.to_string()))
            .insert_header((header, key))
    };
    let keys_path = format!("/applications/{id}/keys");
    for (header, key) in [("Idempotency-Key", "k-1"), ("SVC-IDEMPOTENCY-KEY", "k-2")] {
        let first = send_raw(&app, bodiless(&keys_path, header, key)).await;
        assert_eq!(first.status, 201, "{}", first.body);
        let retry = send_raw(&app, bodiless(&keys_path, header, key)).await;
        assert_eq!(retry.status, 201, "{}", retry.body);
        assert_eq!(retry.body["key"], first.body["key"], "{header}");
        assert_eq!(retry.body["id"], first.body["id"]);
        assert_eq!(
            retry
                .headers
                .get("idempotent-replayed")
                .map(|v| v.as_bytes()),
            Some(&b"true"[..])
        );
    }
    let held = Caller::new(&app, admin).get(&keys_path).await.expect(200);
    assert_eq!(
        held.body.as_array().map(Vec::len),
        Some(3),
        "the key made at create and one per idempotency key: {}",
        held.body
    );
    let regenerate = format!("/applications/{id}/regenerate");
    let first = send_raw(&app, bodiless(&regenerate, "Idempotency-Key", "r-1")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let retry = send_raw(&app, bodiless(&regenerate, "Idempotency-Key", "r-1")).await;
    assert_eq!(retry.status, 200);
    assert_eq!(retry.body["key"], first.body["key"]);
    let fresh = first.body["key"].as_str().expect("key");
    Caller::new(&app, fresh)
        .get("/applications/key")
        .await
        .expect(200);
    // The same key with a body is another request: 422, never a second run.
    let other = bodiless(&regenerate, "Idempotency-Key", "r-1")
        .insert_header(("content-type", "text/plain"))
        .set_payload("x");
    assert_eq!(send_raw(&app, other).await.status, 422);
}
