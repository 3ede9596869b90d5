//! Several keys per application on both backends (docs/api.md, "Application keys"): keys
//! added, listed without their secrets, read and revoked; who may do each; regenerate revoking
//! them all; `expires_at`; `create_key: false`; the list filters; `GET /applications/key`.

use std::time::Duration;

use actix_web::{body::MessageBody, http::Method, test};
use serde_json::{json, Value};
use tessera_testkit::{
    api::{app_key, application_id, state, tenant, Caller},
    backend_tests,
    db::TestDatabase,
    upstream::Upstream,
};

use crate::caller::{
    id_of, ids, new_application, one_tenant, serve, two_tenants, with_gateway, ManagementApi, MIB,
};

backend_tests!(
    keys_are_added_listed_read_and_revoked,
    the_keys_permission_matrix,
    a_key_holding_application_update_mints_nothing_beyond_it,
    a_revoked_key_is_refused_elsewhere_within_the_cache_ttl,
    regenerate_revokes_every_key,
    an_expired_applications_keys_are_refused_like_unknown_ones,
    an_expired_applications_req_svc_is_refused,
    create_key_false_creates_an_application_without_a_key,
    applications_are_filtered_by_id_and_type,
    the_key_route_answers_the_calling_application,
    a_database_copy_holds_only_the_hashes_of_keys,
    concurrent_key_creations_stop_at_the_cap,
);

/// The detail of the 401 for a key that is unknown, revoked or expired.
const UNKNOWN: &str = "the API key is unknown or has been revoked";

/// Creates an application from `spec` as `admin`: its body as created.
async fn created<S, B>(admin: Caller<'_, S>, spec: Value) -> Value
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    admin.post("/applications", spec).await.expect(201).body
}

/// The keys of application `id`, as `caller` lists them.
async fn keys<S, B>(caller: Caller<'_, S>, id: &str) -> Vec<Value>
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let r = caller.get(&format!("/applications/{id}/keys")).await;
    r.expect(200).body.as_array().expect("a bare array").clone()
}

/// The id of the application `key` acts as, as `GET /applications/key` answers it.
async fn acting_as<S, B>(caller: Caller<'_, S>, key: &str) -> String
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    id_of(
        &caller
            .with_key(key)
            .get("/applications/key")
            .await
            .expect(200)
            .body,
    )
}

/// A key of a new "updater" management application (`application:update`, `proxy:read`),
/// created with `admin_key`.
async fn updater_key<S, B>(app: &S, admin_key: &str) -> String
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let spec = json!({"name": "updater", "type": "management",
        "permissions": ["application:update", "proxy:read"]});
    app_key(app, admin_key, spec).await
}

/// Asserts that `key` is refused exactly as an unknown key is.
async fn refused<S, B>(caller: Caller<'_, S>, key: &str)
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let r = caller
        .with_key(key)
        .get("/applications/key")
        .await
        .expect(401);
    assert_eq!(r.body["detail"], json!(UNKNOWN), "no oracle: {}", r.body);
}

async fn keys_are_added_listed_read_and_revoked(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let spec = json!({"name": "backend", "type": "private", "permissions": ["token:read"]});
    let b = created(admin, spec).await;
    let id = id_of(&b);
    let first = b["key"].as_str().expect("key").to_string();
    assert_eq!(b["keys"].as_array().map(Vec::len), Some(1));
    assert!(
        b["keys"][0].get("key").is_none(),
        "keys never carry secrets"
    );

    let uri = format!("/applications/{id}/keys");
    let added = admin.post_empty(&uri).await.expect(201).body;
    let second = added["key"].as_str().expect("shown once").to_string();
    assert!(second.starts_with("key_") && second != first);
    assert_eq!(
        added["created_by"],
        json!(application_id(&app, &t.admin_key, "admin").await)
    );
    assert!(added["created_at"]
        .as_str()
        .expect("ts")
        .ends_with("+00:00"));
    let key_id = id_of(&added);

    let listed = keys(admin, &id).await;
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|k| k.get("key").is_none()));
    assert_eq!(id_of(&listed[1]), key_id, "oldest first");
    let one = admin.get(&format!("{uri}/{key_id}")).await.expect(200).body;
    assert!(one.get("key").is_none());
    assert_eq!(one["created_at"], added["created_at"]);
    let got = admin
        .get(&format!("/applications/{id}"))
        .await
        .expect(200)
        .body;
    assert_eq!(got["keys"].as_array().map(Vec::len), Some(2));
    assert!(got.get("key").is_none());

    // Both keys act as the application.
    for key in [&first, &second] {
        assert_eq!(acting_as(admin, key).await, id);
    }
    admin.delete(&format!("{uri}/{key_id}")).await.expect(204);
    refused(admin, &second).await;
    assert_eq!(acting_as(admin, &first).await, id);
    admin.get(&format!("{uri}/{key_id}")).await.expect(404);
    admin.delete(&format!("{uri}/{key_id}")).await.expect(404);
    admin.get(&format!("{uri}/nope")).await.expect(400);
    let r = admin.get(&format!("{uri}?type=private")).await.expect(400);
    assert_eq!(r.error_fields(), vec!["type".to_string()]);
    assert_eq!(keys(admin, &id).await.len(), 1);

    let audit = admin
        .get(&format!("/audit-events?resource_id={key_id}"))
        .await;
    let actions: Vec<&str> = audit.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert_eq!(
        actions,
        vec!["application.key_revoked", "application.key_created"]
    );
}

/// Who may do what on `/keys`: `application:read` lists and reads, `application:update` adds
/// and revokes; a private key does neither; another tenant's application is a 404 to all.
async fn the_keys_permission_matrix(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let target = new_application(admin, "ops", "management", &["proxy:read"]).await;
    let target_id = id_of(&target);
    let reader = app_key(
        &app,
        &a.admin_key,
        json!({"name": "reader", "type": "management", "permissions": ["application:read"]}),
    )
    .await;
    let updater = updater_key(&app, &a.admin_key).await;
    let private = app_key(
        &app,
        &a.admin_key,
        json!({"name": "p", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    let key_id = id_of(&target["keys"][0]);
    let list = format!("/applications/{target_id}/keys");
    let one = format!("{list}/{key_id}");

    let as_reader = admin.with_key(&reader);
    as_reader.get(&list).await.expect(200);
    as_reader.get(&one).await.expect(200);
    as_reader.post_empty(&list).await.expect(403);
    as_reader.delete(&one).await.expect(403);

    let as_updater = admin.with_key(&updater);
    as_updater.get(&list).await.expect(403);
    as_updater.get(&one).await.expect(403);
    let minted = as_updater.post_empty(&list).await.expect(201).body;
    let minted_one = format!("{list}/{}", id_of(&minted));
    as_updater.delete(&minted_one).await.expect(204);

    let routes = [
        (Method::GET, &list),
        (Method::POST, &list),
        (Method::GET, &one),
        (Method::DELETE, &one),
    ];
    let as_private = admin.with_key(&private);
    for (method, uri) in routes.clone() {
        as_private.send(method, uri, None).await.expect(403);
    }

    // Another tenant's admin holds every permission, and finds nothing.
    let other = Caller::new(&app, &b.admin_key);
    for (method, uri) in routes {
        other.send(method, uri, None).await.expect(404);
    }
    let missing = format!("/applications/{}/keys", uuid::Uuid::new_v4());
    admin.post_empty(&missing).await.expect(404);
    admin.get(&missing).await.expect(404);
    assert_eq!(
        keys(admin, &target_id).await.len(),
        1,
        "nothing else changed"
    );
}

/// The attacker's question: a key holding `application:update` asks `/keys` for a key of an
/// application holding more than it does (the bootstrap admin, or a sibling with one more
/// permission). Refused like regenerate (403), and nothing is minted.
async fn a_key_holding_application_update_mints_nothing_beyond_it(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let updater = updater_key(&app, &t.admin_key).await;
    let wider = created(
        admin,
        json!({"name": "wider", "type": "management", "permissions": ["proxy:read", "proxy:create"]}),
    )
    .await;
    let admin_id = application_id(&app, &t.admin_key, "admin").await;
    let as_updater = admin.with_key(&updater);
    for target in [admin_id, id_of(&wider)] {
        let uri = format!("/applications/{target}/keys");
        let r = as_updater.post_empty(&uri).await.expect(403);
        assert!(r.body.get("key").is_none());
        let detail = r.body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("does not hold it"), "{detail}");
        assert_eq!(keys(admin, &target).await.len(), 1, "nothing was minted");
        // Nor may it revoke their keys.
        let key_id = id_of(&keys(admin, &target).await[0]);
        as_updater
            .delete(&format!("{uri}/{key_id}"))
            .await
            .expect(403);
    }
    // The admin's key still works.
    admin.get("/applications").await.expect(200);
}

/// Two processes over one database: a key revoked through one is refused there at once and
/// by the other within its cache TTL (1 s by default).
async fn a_revoked_key_is_refused_elsewhere_within_the_cache_ttl(db: &TestDatabase) {
    let first = state(db, MIB);
    let t = tenant(&first, "acme").await;
    let here = serve(first).await;
    let there = serve(state(db, MIB)).await;
    let admin = Caller::new(&here, &t.admin_key);
    let b = new_application(admin, "b", "private", &["token:read"]).await;
    let key = b["key"].as_str().expect("key").to_string();
    let elsewhere = Caller::new(&there, &key);
    elsewhere.get("/applications/key").await.expect(200);
    let key_id = id_of(&b["keys"][0]);
    admin
        .delete(&format!("/applications/{}/keys/{key_id}", id_of(&b)))
        .await
        .expect(204);
    refused(admin, &key).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let r = elsewhere.get("/applications/key").await.expect(401);
    assert_eq!(r.body["detail"], json!(UNKNOWN));
}

async fn regenerate_revokes_every_key(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let b = new_application(admin, "b", "private", &["token:read"]).await;
    let id = id_of(&b);
    let uri = format!("/applications/{id}/keys");
    let mut old = vec![b["key"].as_str().expect("key").to_string()];
    for _ in 0..2 {
        let added = admin.post_empty(&uri).await.expect(201).body;
        old.push(added["key"].as_str().expect("key").to_string());
    }
    assert_eq!(keys(admin, &id).await.len(), 3);
    let regenerated = admin
        .post_empty(&format!("/applications/{id}/regenerate"))
        .await
        .expect(200)
        .body;
    let new = regenerated["key"].as_str().expect("new key");
    for key in &old {
        refused(admin, key).await;
    }
    admin
        .with_key(new)
        .get("/applications/key")
        .await
        .expect(200);
    let left = keys(admin, &id).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0], regenerated["keys"][0]);
}

/// `expires_at` must be in the future at create; after it, every key of the application is
/// refused exactly like an unknown key, cached or not, and the keys are still listed.
async fn an_expired_applications_keys_are_refused_like_unknown_ones(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let spec = |at: String| json!({"name": "temp", "type": "private", "permissions": ["token:read"], "expires_at": at});
    for past in ["2000-01-01T00:00:00Z", "soon"] {
        let r = admin
            .post("/applications", spec(past.into()))
            .await
            .expect(400);
        assert!(
            r.error_fields().contains(&"expires_at".to_string()),
            "{past}"
        );
    }
    let at = time::OffsetDateTime::now_utc() + time::Duration::milliseconds(1_500);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let b = created(admin, spec(at)).await;
    let id = id_of(&b);
    assert!(b["expires_at"].as_str().expect("shown").ends_with("+00:00"));
    let first = b["key"].as_str().expect("key").to_string();
    let added = admin
        .post_empty(&format!("/applications/{id}/keys"))
        .await
        .expect(201);
    let second = added.body["key"].as_str().expect("key").to_string();
    for key in [&first, &second] {
        admin
            .with_key(key)
            .get("/applications/key")
            .await
            .expect(200);
    }
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    for key in [&first, &second] {
        refused(admin, key).await;
        admin.with_key(key).get("/tokens").await.expect(401);
    }
    let unknown = format!("key_{}", "A".repeat(32));
    refused(admin, &unknown).await;
    let got = admin
        .get(&format!("/applications/{id}"))
        .await
        .expect(200)
        .body;
    assert_eq!(got["expires_at"], b["expires_at"]);
    assert_eq!(got["keys"].as_array().map(Vec::len), Some(2));
}

/// A transform acting as an expired application: its `req.svc` calls are refused (401),
/// though they worked before the instant.
async fn an_expired_applications_req_svc_is_refused(db: &TestDatabase) {
    let (st, _, admin) = tessera_testkit::api::private_state(db).await;
    let at = tessera_domain::timestamp::now() + time::Duration::milliseconds(1_500);
    let input: tessera_domain::ApplicationInput = serde_json::from_value(json!({
        "name": "svc", "type": "private", "permissions": ["token:create"],
        "expires_at": tessera_domain::timestamp::format(at)}))
    .expect("input");
    let svc_app = st
        .vault
        .create_application(&admin, input)
        .await
        .expect("app");
    let upstream = Upstream::start(None).await;
    let code = "module.exports = async (req) => {
      let status = 'ok';
      try { await req.svc.tokenize({ type: 'token', data: 'x' }); } catch (err) { status = err.status; }
      return { body: { status }, headers: { 'content-type': 'application/json' } };
    };";
    let proxy: tessera_domain::ProxyInput = serde_json::from_value(json!({"name": "p",
        "destination_url": format!("http://127.0.0.1:{}/", upstream.addr.port()),
        "require_auth": false,
        "application": {"id": svc_app.application.id.to_string()},
        "response_transform": {"code": code}}))
    .expect("proxy");
    let proxy = st.vault.create_proxy(&admin, proxy).await.expect("proxy");
    let app = with_gateway(st).await;
    let call = || {
        test::TestRequest::post()
            .uri("/proxy")
            .insert_header(("svc-proxy-key", proxy.key.expose().as_str()))
            .set_json(json!({}))
            .to_request()
    };
    let before: Value = test::call_and_read_body_json(&app, call()).await;
    assert_eq!(before, json!({"status": "ok"}));
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let after: Value = test::call_and_read_body_json(&app, call()).await;
    assert_eq!(after, json!({"status": 401}));
}

async fn create_key_false_creates_an_application_without_a_key(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let b = created(
        admin,
        json!({"name": "later", "type": "private", "permissions": ["token:read"],
               "create_key": false}),
    )
    .await;
    assert!(b.get("key").is_none_or(Value::is_null), "{b}");
    assert_eq!(b["keys"], json!([]));
    let id = id_of(&b);
    assert!(keys(admin, &id).await.is_empty());
    let added = admin
        .post_empty(&format!("/applications/{id}/keys"))
        .await
        .expect(201);
    let key = added.body["key"].as_str().expect("key");
    assert_eq!(acting_as(admin, key).await, id);
    // `create_key: true` and `null` both issue a key.
    for create_key in [json!(true), Value::Null] {
        let b = created(
            admin,
            json!({"name": "now", "type": "private", "permissions": ["token:read"],
                   "create_key": create_key}),
        )
        .await;
        assert!(b["key"].is_string());
    }
}

async fn applications_are_filtered_by_id_and_type(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let mut made = Vec::new();
    for (name, kind, permission) in [
        ("a", "private", "token:read"),
        ("b", "public", "token:create"),
        ("c", "private", "token:use"),
    ] {
        let spec = json!({"name": name, "type": kind, "permissions": [permission]});
        made.push(id_of(&created(admin, spec).await));
    }
    let admin_id = application_id(&app, &t.admin_key, "admin").await;
    let page = |query: String| async move { admin.page(&format!("/applications?{query}")).await };
    let two = page(format!("id={}&id={}", made[0], made[2])).await;
    assert_eq!(ids(&two), vec![made[0].clone(), made[2].clone()]);
    assert_eq!(two["pagination"]["total_items"], json!(2));
    let private = page("type=private".into()).await;
    assert_eq!(ids(&private), vec![made[0].clone(), made[2].clone()]);
    let mixed = page("type=public&type=management".into()).await;
    assert_eq!(ids(&mixed), vec![admin_id, made[1].clone()]);
    let both = page(format!("id={}&id={}&type=public", made[0], made[1])).await;
    assert_eq!(ids(&both), vec![made[1].clone()]);
    assert!(page(format!("id={}", uuid::Uuid::new_v4())).await["data"]
        .as_array()
        .expect("data")
        .is_empty());
    for (query, field) in [("id=nope", "id"), ("type=root", "type")] {
        let r = admin
            .get(&format!("/applications?{query}"))
            .await
            .expect(400);
        assert_eq!(r.error_fields(), vec![field.to_string()], "{query}");
    }
    // A page past the end is an empty page, not an error (node-sdk walks until one).
    let past = page("page=9&size=2".into()).await;
    assert_eq!(past["data"], json!([]));
    assert_eq!(past["pagination"]["total_items"], json!(4));
    // Keys are listed with each application.
    assert_eq!(two["data"][0]["keys"].as_array().map(Vec::len), Some(1));
}

/// `GET /applications/key` answers any valid key with its own application, without a
/// permission; it is not read as an application id.
async fn the_key_route_answers_the_calling_application(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let b = new_application(admin, "narrow", "public", &["token:create"]).await;
    let key = b["key"].as_str().expect("key");
    for uri in ["/applications/key", "/applications/key/"] {
        let me = admin.with_key(key).get(uri).await.expect(200).body;
        assert_eq!(me["id"], b["id"]);
        assert_eq!(me["type"], json!("public"));
        assert!(me.get("key").is_none(), "never the key itself");
        assert_eq!(me["keys"], b["keys"]);
    }
    let mine = admin.get("/applications/key").await.expect(200).body;
    assert_eq!(mine["name"], json!("admin"));
    Caller::anonymous(&app)
        .get("/applications/key")
        .await
        .expect(401);
}

/// What a copy of the database gives of application keys: their SHA-256 hashes, never a key,
/// including a revoked one (its row deleted but perhaps not yet vacuumed).
async fn a_database_copy_holds_only_the_hashes_of_keys(db: &TestDatabase) {
    use sha2::{Digest, Sha256};
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let b = new_application(admin, "b", "private", &["token:read"]).await;
    let uri = format!("/applications/{}/keys", id_of(&b));
    let added = admin.post_empty(&uri).await.expect(201).body;
    let revoked = admin.post_empty(&uri).await.expect(201).body;
    admin
        .delete(&format!("{uri}/{}", id_of(&revoked)))
        .await
        .expect(204);
    let stored = db.stored_bytes().await;
    let holds = |needle: &[u8]| stored.windows(needle.len()).any(|w| w == needle);
    for body in [&b, &added] {
        let key = body["key"].as_str().expect("key");
        assert!(!holds(key.as_bytes()), "no key reaches the database");
        let hash: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        assert!(holds(&hash), "sanity: the key is stored as its SHA-256");
    }
    let key = revoked["key"].as_str().expect("key");
    assert!(!holds(key.as_bytes()), "nor a revoked one");
    assert!(!holds(t.admin_key.as_bytes()));
}

/// At 96 keys, twelve concurrent additions leave exactly 100 live: the count and the insert
/// are one step (103 to 107 were left live when they were two).
async fn concurrent_key_creations_stop_at_the_cap(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let spec = json!({"name": "backend", "type": "private", "permissions": ["token:read"]});
    let id = id_of(&created(admin, spec).await);
    let uri = format!("/applications/{id}/keys");
    for _ in 0..95 {
        admin.post_empty(&uri).await.expect(201);
    }
    assert_eq!(keys(admin, &id).await.len(), 96);
    let racing = (0..12).map(|_| admin.post_empty(&uri));
    let statuses: Vec<u16> = futures_util::future::join_all(racing)
        .await
        .iter()
        .map(|r| r.status.as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        4,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        8,
        "{statuses:?}"
    );
    assert_eq!(keys(admin, &id).await.len(), 100);
}
