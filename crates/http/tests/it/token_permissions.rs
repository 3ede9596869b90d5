//! Which token requests a key may make, on both backends: rules by container, the fallback
//! `permissions`, create checked against the target container, and management keys.

use actix_web::{body::MessageBody, http::Method};
use serde_json::json;
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{one_tenant, total, Caller, ManagementApi};

backend_tests!(
    rules_decide_what_a_key_reads_lists_and_deletes,
    a_key_without_create_or_delete_stores_and_removes_nothing,
    create_is_checked_against_the_target_container,
    management_keys_cannot_touch_tokens,
);

/// Creates one token in each of /pci/a/, /pci/secret/ and /general/: their ids, in that order.
async fn three_containers<S, B>(admin: Caller<'_, S>) -> Vec<String>
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let mut ids = vec![];
    for c in ["/pci/a/", "/pci/secret/", "/general/"] {
        let body = json!({"type": "token", "data": c, "containers": [c]});
        ids.push(admin.create("/tokens", body).await);
    }
    ids
}

/// A key holding only `token:read`.
async fn reader_key<S, B>(admin: Caller<'_, S>) -> String
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    admin
        .app_key(json!({"name": "r", "type": "private", "permissions": ["token:read"]}))
        .await
}

async fn rules_decide_what_a_key_reads_lists_and_deletes(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    // Reads everything under /pci/ except /pci/secret/; creates anywhere.
    let scoped = admin.app_key(json!({"name": "s", "type": "private", "permissions": ["token:create"], "rules": [
        {"priority": 1, "container": "/pci/secret/", "permissions": ["token:create"]},
        {"priority": 2, "container": "/pci/", "permissions": ["token:create", "token:read", "token:delete"]}
    ]})).await;
    let ids = three_containers(admin).await;
    let scoped = admin.with_key(&scoped);
    // The /general/ fallback comes from `permissions` (token:create only), so no read there.
    for (method, id, status) in [
        (Method::GET, &ids[0], 200),
        (Method::GET, &ids[1], 403),
        (Method::GET, &ids[2], 403),
        (Method::DELETE, &ids[1], 403),
    ] {
        let uri = format!("/tokens/{id}");
        scoped.send(method, &uri, None).await.expect(status);
    }
    let list = scoped.page("/tokens").await;
    assert_eq!(
        total(&list),
        &json!(1),
        "unreadable tokens are neither listed nor counted"
    );
    assert_eq!(list["data"][0]["id"], json!(ids[0]));
}

/// A reader without token:create gets 403 and nothing is stored.
async fn a_key_without_create_or_delete_stores_and_removes_nothing(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let ids = three_containers(admin).await;
    let reader = reader_key(admin).await;
    let reader = admin.with_key(&reader);
    let body = json!({"type": "token", "data": 1});
    reader.post("/tokens", body).await.expect(403);
    let uri = format!("/tokens/{}", ids[2]);
    reader.delete(&uri).await.expect(403);
    assert_eq!(reader.total("/tokens").await, json!(3));
}

async fn create_is_checked_against_the_target_container(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    three_containers(admin).await;
    let reader = reader_key(admin).await;
    let only_pci = admin
        .app_key(json!({"name": "c", "type": "private", "rules": [
        {"priority": 1, "container": "/pci/", "permissions": ["token:create"]}]}))
        .await;
    let only_pci = admin.with_key(&only_pci);
    let in_pci = json!({"type": "token", "data": 1, "containers": ["/pci/x/"]});
    only_pci.post("/tokens", in_pci).await.expect(201);
    let by_default = json!({"type": "token", "data": 1});
    only_pci.post("/tokens", by_default).await.expect(403);
    only_pci.get("/tokens").await.expect(403);
    assert_eq!(
        admin.with_key(&reader).total("/tokens").await,
        json!(4),
        "the refused create stored nothing"
    );
}

/// A management key without token permissions cannot touch tokens.
async fn management_keys_cannot_touch_tokens(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let ids = three_containers(admin).await;
    let manager = admin
        .app_key(json!({"name": "m", "type": "management", "permissions": ["application:read"]}))
        .await;
    let uri = format!("/tokens/{}", ids[0]);
    admin.with_key(&manager).get(&uri).await.expect(403);
}
