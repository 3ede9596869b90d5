//! Who may learn that a token exists (docs/api.md, "Fingerprints and deduplication"): whether an equal token exists, what it is, and any token's
//! fingerprint are told only to callers holding `token:read` on that token's container. The
//! rules as a matrix of permissions and containers, on both backends.

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    Error,
};
use serde_json::{json, Value};
use tessera_testkit::api::{app_key, app_with_tenant, create, send, Reply, TenantKeys};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    deduplication_without_read_is_refused_whatever_exists,
    deduplication_follows_the_target_containers_read_rule,
    bulk_and_child_deduplication_need_read_too,
    fingerprints_are_shown_only_to_readers,
    fingerprint_search_is_narrowed_to_readable_containers,
    setting_or_shortening_an_expiry_needs_delete,
);

const CARD: &str = "4242424242424242";

fn card(container: Option<&str>, dedup: bool) -> Value {
    let mut body =
        json!({"type": "card", "data": {"number": CARD}, "metadata": {"owner": "alice"}});
    if let Some(c) = container {
        body["containers"] = json!([c]);
    }
    if dedup {
        body["deduplicate_token"] = json!(true);
    }
    body
}

/// The API over `db` with the tenant "acme" and one application of `spec` in it: the app, the
/// tenant's keys and the application's key.
async fn acme_with_key(
    db: &TestDatabase,
    spec: Value,
) -> (
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
    TenantKeys,
    String,
) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let key = app_key(&app, &t.admin_key, spec).await;
    (app, t, key)
}

async fn post<S, B>(app: &S, key: &str, path: &str, body: Value) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    send(app, Method::POST, path, Some(key), Some(body)).await
}

async fn count_cards<S, B>(app: &S, admin: &str) -> u64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    send(app, Method::GET, "/tokens?type=card", Some(admin), None)
        .await
        .expect(200)
        .body["pagination"]["total_items"]
        .as_u64()
        .expect("count")
}

/// A `public` key holding only `token:create` asks to deduplicate: 403, the same answer
/// before and after an equal token exists, and nothing is created.
async fn deduplication_without_read_is_refused_whatever_exists(db: &TestDatabase) {
    let (app, t, public) = acme_with_key(
        db,
        json!({"name": "web", "type": "public", "permissions": ["token:create"]}),
    )
    .await;
    let admin = t.admin_key.as_str();
    let before = post(&app, &public, "/tokens", card(None, true))
        .await
        .expect(403);
    post(&app, admin, "/tokens", card(None, false))
        .await
        .expect(201);
    let after = post(&app, &public, "/tokens", card(None, true))
        .await
        .expect(403);
    assert_eq!(before.body, after.body, "the refusal cannot tell");
    assert!(!after.raw.windows(5).any(|w| w == b"alice"), "no metadata");
    assert_eq!(count_cards(&app, admin).await, 1, "nothing created");
    // Without the flag the same key creates, and learns no fingerprint.
    let created = post(&app, &public, "/tokens", card(None, false))
        .await
        .expect(201);
    assert!(
        created.body.get("fingerprint").is_none(),
        "{}",
        created.body
    );
}

/// A key that may create everywhere but read only `/pci/low/` deduplicates there and
/// nowhere else; the decision is by the target container, whatever the key's other grants.
async fn deduplication_follows_the_target_containers_read_rule(db: &TestDatabase) {
    let (app, t, scoped) = acme_with_key(db, json!({"name": "scoped", "type": "private", "permissions": ["token:create"],
               "rules": [{"priority": 1, "container": "/pci/low/", "permissions": ["token:create", "token:read"]}]})).await;
    let admin = t.admin_key.as_str();
    for c in ["/pci/high/", "/pci/low/"] {
        post(&app, admin, "/tokens", card(Some(c), false))
            .await
            .expect(201);
    }
    post(&app, &scoped, "/tokens", card(Some("/pci/high/"), true))
        .await
        .expect(403);
    post(&app, &scoped, "/tokens", card(None, true))
        .await
        .expect(403);
    let found = post(&app, &scoped, "/tokens", card(Some("/pci/low/"), true))
        .await
        .expect(200);
    assert_eq!(found.body["containers"], json!(["/pci/low/"]));
    assert_eq!(found.body["metadata"]["owner"], "alice");
    assert!(found.body["fingerprint"].is_string(), "a reader sees it");
}

/// `/tokenize` refuses the whole batch (nothing created) when one element asks to
/// deduplicate without read; a child created under a readable parent into an unreadable
/// container is refused the same way.
async fn bulk_and_child_deduplication_need_read_too(db: &TestDatabase) {
    let (app, t, creator) = acme_with_key(
        db,
        json!({"name": "c", "type": "private", "permissions": ["token:create"],
               "rules": [{"priority": 1, "container": "/general/", "permissions": ["token:create", "token:read"]}]}),
    )
    .await;
    let admin = t.admin_key.as_str();
    post(&app, admin, "/tokens", card(None, false))
        .await
        .expect(201);
    let batch = json!([{"type": "token", "data": "x"}, card(None, true)]);
    let refused = post(&app, &creator, "/tokenize", batch).await.expect(403);
    assert!(!refused.raw.windows(5).any(|w| w == b"alice"));
    assert_eq!(count_cards(&app, admin).await, 1);
    let general = send(&app, Method::GET, "/tokens?type=token", Some(admin), None)
        .await
        .expect(200);
    assert_eq!(general.body["pagination"]["total_items"], 0, "all or none");

    let parent = create(
        &app,
        &creator,
        "/tokens",
        json!({"type": "token", "data": "p"}),
    )
    .await;
    post(
        &app,
        &creator,
        &format!("/tokens/{parent}/children"),
        card(None, true),
    )
    .await
    .expect(403);
    assert_eq!(count_cards(&app, admin).await, 1);
}

/// Create, update and search-without-data answers carry the fingerprint only for a caller
/// that may read the token.
async fn fingerprints_are_shown_only_to_readers(db: &TestDatabase) {
    let (app, t, writer) = acme_with_key(
        db,
        json!({"name": "w", "type": "private", "permissions": ["token:create", "token:update"]}),
    )
    .await;
    let admin = t.admin_key.as_str();
    let created = post(&app, admin, "/tokens", card(None, false))
        .await
        .expect(201);
    assert!(created.body["fingerprint"].is_string(), "the admin reads");
    let id = created.body["id"].as_str().expect("id");
    let patched = send(
        &app,
        Method::PATCH,
        &format!("/tokens/{id}"),
        Some(&writer),
        Some(json!({})),
    )
    .await
    .expect(200);
    assert!(
        patched.body.get("fingerprint").is_none(),
        "{}",
        patched.body
    );
    let own = post(&app, &writer, "/tokens", card(None, false))
        .await
        .expect(201);
    assert!(own.body.get("fingerprint").is_none(), "{}", own.body);
    let page = post(&app, admin, "/tokens/search", json!({"type": ["card"]}))
        .await
        .expect(200);
    for item in page.body["data"].as_array().expect("data") {
        assert!(item["fingerprint"].is_string());
    }
}

/// Searching by a fingerprint finds only tokens the caller may read.
async fn fingerprint_search_is_narrowed_to_readable_containers(db: &TestDatabase) {
    let (app, t, low_reader) = acme_with_key(db, json!({"name": "r", "type": "private", "permissions": [],
               "rules": [{"priority": 1, "container": "/pci/low/", "permissions": ["token:read"]}]})).await;
    let admin = t.admin_key.as_str();
    let high = post(&app, admin, "/tokens", card(Some("/pci/high/"), false))
        .await
        .expect(201);
    let fingerprint = high.body["fingerprint"].as_str().expect("fp").to_string();
    let search = json!({"fingerprint": fingerprint});
    let page = post(&app, &low_reader, "/tokens/search", search.clone())
        .await
        .expect(200);
    assert_eq!(page.body["pagination"]["total_items"], 0);
    post(&app, admin, "/tokens", card(Some("/pci/low/"), false))
        .await
        .expect(201);
    let page = post(&app, &low_reader, "/tokens/search", search)
        .await
        .expect(200);
    assert_eq!(page.body["pagination"]["total_items"], 1);
    assert_eq!(page.body["data"][0]["containers"], json!(["/pci/low/"]));
}

/// An expiry is a scheduled delete. Setting one, or bringing one forward, needs
/// `token:delete` too; postponing or clearing it does not.
async fn setting_or_shortening_an_expiry_needs_delete(db: &TestDatabase) {
    let (app, t, updater) = acme_with_key(
        db,
        json!({"name": "u", "type": "private", "permissions": ["token:update", "token:read"]}),
    )
    .await;
    let admin = t.admin_key.as_str();
    let at = |days: i64| {
        (time::OffsetDateTime::now_utc() + time::Duration::days(days))
            .format(&time::format_description::well_known::Rfc3339)
            .expect("format")
    };
    let id = create(
        &app,
        admin,
        "/tokens",
        json!({"type": "token", "data": "v"}),
    )
    .await;
    let path = format!("/tokens/{id}");
    let patch = |key: String, body: Value| {
        let path = path.clone();
        let app = &app;
        async move { send(app, Method::PATCH, &path, Some(&key), Some(body)).await }
    };
    patch(updater.clone(), json!({"expires_at": at(1)}))
        .await
        .expect(403);
    patch(admin.to_string(), json!({"expires_at": at(10)}))
        .await
        .expect(200);
    patch(updater.clone(), json!({"expires_at": at(2)}))
        .await
        .expect(403);
    patch(updater.clone(), json!({"expires_at": at(20)}))
        .await
        .expect(200);
    patch(updater.clone(), json!({"expires_at": null}))
        .await
        .expect(200);
    patch(updater.clone(), json!({"metadata": {"k": "v"}}))
        .await
        .expect(200);
    let token = send(&app, Method::GET, &path, Some(admin), None)
        .await
        .expect(200);
    assert_eq!(token.body["expires_at"], Value::Null);
}
