//! What Basis Theory's SDKs send, answered as they expect (docs/migrating.md), on both
//! backends: the idempotency key as `SVC-IDEMPOTENCY-KEY`, one trailing slash on management
//! paths, the correlation id as `SVC-TRACE-ID`, `PUT /applications/{id}` without `type`,
//! transforms with `"type": "code"` and `metadata[key]=value` list filters.

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    test, Error,
};
use serde_json::{json, Value};
use tessera_testkit::{
    api::{private_state, send_raw, Reply},
    backend_tests,
    db::TestDatabase,
    upstream::Upstream,
};

use crate::caller::{
    id_of, ids, new_application, one_tenant, proxy_to, total, with_gateway, Caller, ManagementApi,
};

backend_tests!(
    the_sdk_idempotency_header_replays_like_idempotency_key,
    different_keys_in_the_two_idempotency_headers_are_refused,
    an_sdk_keyed_replay_is_authorised_again,
    management_routes_answer_with_one_trailing_slash,
    a_trailing_slash_keeps_authentication_audit_and_metrics,
    a_path_and_its_trailing_slash_share_idempotency_keys,
    proxy_paths_keep_their_trailing_slash,
    an_svc_trace_id_is_the_request_id_without_x_request_id,
    putting_an_application_without_type_keeps_its_type,
    an_untyped_put_still_cannot_escalate,
    a_transform_may_say_it_is_code,
    metadata_filters_may_be_written_as_deep_objects,
    deduplicate_token_on_update_is_accepted_and_changes_nothing,
    fields_for_features_tessera_lacks_are_refused_by_name,
);

const SDK_KEY: &str = "SVC-IDEMPOTENCY-KEY";
const TOKEN: &str = r#"{"type": "token", "data": "secret"}"#;

fn token_body() -> Value {
    serde_json::from_str(TOKEN).expect("json")
}

/// `method uri` with `key`, `headers` and an optional JSON body.
async fn call<S, B>(
    app: &S,
    key: Option<&str>,
    (method, uri): (Method, &str),
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let mut req = test::TestRequest::default().method(method).uri(uri);
    if let Some(key) = key {
        req = req.insert_header(("SVC-API-KEY", key));
    }
    for (name, value) in headers {
        req = req.insert_header((*name, *value));
    }
    if let Some(body) = body {
        req = req.set_json(body);
    }
    send_raw(app, req).await
}

fn replayed(r: &Reply) -> bool {
    r.headers
        .get("idempotent-replayed")
        .is_some_and(|v| v.as_bytes() == b"true")
}

/// `method uri` with `key`, the idempotency key `idem` in [`SDK_KEY`] and `body`.
async fn sdk_keyed<S, B>(
    app: &S,
    key: Option<&str>,
    request: (Method, &str),
    idem: &str,
    body: &Value,
) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    call(app, key, request, &[(SDK_KEY, idem)], Some(body)).await
}

/// `POST /tokens` with `key`, `headers` and [`TOKEN`]: the 201 answer.
async fn created_token<S, B>(app: &S, key: Option<&str>, headers: &[(&str, &str)]) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    call(
        app,
        key,
        (Method::POST, "/tokens"),
        headers,
        Some(&token_body()),
    )
    .await
    .expect(201)
}

async fn the_sdk_idempotency_header_replays_like_idempotency_key(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let key = Some(t.admin_key.as_str());
    let post = (Method::POST, "/tokens");
    let body = token_body();
    let first = created_token(&app, key, &[(SDK_KEY, "sdk-1")]).await;
    let again = created_token(&app, key, &[(SDK_KEY, "sdk-1")]).await;
    assert!(replayed(&again) && !replayed(&first));
    assert_eq!(id_of(&again.body), id_of(&first.body));
    // One key space: the alias replays what `Idempotency-Key` created, and the reverse.
    let std = created_token(&app, key, &[("Idempotency-Key", "k-2")]).await;
    let alias = created_token(&app, key, &[("svc-idempotency-key", "k-2")]).await;
    assert!(replayed(&alias));
    assert_eq!(id_of(&alias.body), id_of(&std.body));
    let back = created_token(&app, key, &[("Idempotency-Key", "sdk-1")]).await;
    assert_eq!(id_of(&back.body), id_of(&first.body));
    // Both headers with one value are one key.
    let both = [(SDK_KEY, "k-3"), ("Idempotency-Key", "k-3")];
    let third = created_token(&app, key, &both).await;
    let third_again = created_token(&app, key, &[(SDK_KEY, "k-3")]).await;
    assert_eq!(id_of(&third_again.body), id_of(&third.body));
    // The same checks: another request under the key is a 422, a malformed key a 400.
    let other = json!({"type": "token", "data": "other"});
    sdk_keyed(&app, key, post.clone(), "sdk-1", &other)
        .await
        .expect(422);
    let long = "x".repeat(256);
    let r = sdk_keyed(&app, key, post.clone(), &long, &body)
        .await
        .expect(400);
    assert_eq!(r.error_fields(), vec![SDK_KEY]);
    // The other creating POSTs honour it too.
    let apps = (Method::POST, "/applications");
    let spec = json!({"name": "a", "type": "private", "permissions": ["token:read"]});
    let app_first = sdk_keyed(&app, key, apps.clone(), "app-1", &spec)
        .await
        .expect(201);
    let app_again = sdk_keyed(&app, key, apps, "app-1", &spec).await.expect(201);
    assert_eq!(app_again.body["key"], app_first.body["key"]);
    let admin = Caller::new(&app, &t.admin_key);
    assert_eq!(admin.total("/tokens").await, json!(3));
    assert_eq!(admin.total("/applications").await, json!(2));
}

async fn different_keys_in_the_two_idempotency_headers_are_refused(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let key = Some(t.admin_key.as_str());
    let r = call(
        &app,
        key,
        (Method::POST, "/tokens"),
        &[(SDK_KEY, "one"), ("Idempotency-Key", "two")],
        Some(&token_body()),
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec![SDK_KEY]);
    let detail = r.body["detail"].as_str().expect("detail");
    assert!(
        detail.contains(SDK_KEY) && detail.contains("Idempotency-Key"),
        "{detail}"
    );
    assert_eq!(
        Caller::new(&app, &t.admin_key).total("/tokens").await,
        json!(0)
    );
    // Still the key before the body: an unknown API key is a 401 first.
    call(
        &app,
        Some("key_00000000000000000000000000000000"),
        (Method::POST, "/tokens"),
        &[(SDK_KEY, "one"), ("Idempotency-Key", "two")],
        Some(&token_body()),
    )
    .await
    .expect(401);
}

/// A replay through the alias passes the first request's permission checks again, as one
/// through `Idempotency-Key` does.
async fn an_sdk_keyed_replay_is_authorised_again(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let minter = admin
        .app_key(json!({"name": "minter", "type": "management",
            "permissions": ["application:create", "application:read"]}))
        .await;
    let body = json!({"name": "child", "type": "management", "permissions": ["application:read"]});
    let post = (Method::POST, "/applications");
    let minter = Some(minter.as_str());
    let first = sdk_keyed(&app, minter, post.clone(), "m-1", &body)
        .await
        .expect(201);
    let replay = sdk_keyed(&app, minter, post.clone(), "m-1", &body)
        .await
        .expect(201);
    assert!(replayed(&replay));
    assert_eq!(replay.body["key"], first.body["key"]);
    let minter_id = admin.page("/applications").await["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|a| a["name"] == "minter")
        .map(id_of)
        .expect("minter");
    let minter_path = format!("/applications/{minter_id}");
    admin
        .put(
            &minter_path,
            json!({"name": "minter", "type": "management", "permissions": ["application:read"]}),
        )
        .await
        .expect(200);
    let refused = sdk_keyed(&app, minter, post, "m-1", &body)
        .await
        .expect(403);
    let minted = first.body["key"].as_str().expect("key");
    assert!(!String::from_utf8_lossy(&refused.raw).contains(minted));
    assert!(!replayed(&refused));
    assert_eq!(admin.total("/applications").await, json!(3));
}

/// Every management route, called as `basis-theory-js` does, with one trailing slash.
async fn management_routes_answer_with_one_trailing_slash(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let parent = admin.create("/tokens/", token_body()).await;
    let child = id_of(
        &admin
            .post(&format!("/tokens/{parent}/children/"), token_body())
            .await
            .expect(201)
            .body,
    );
    let other = admin.create("/tokens/", token_body()).await;
    let batch = admin
        .post("/tokenize/", json!([token_body(), token_body()]))
        .await
        .expect(201);
    assert_eq!(batch.body.as_array().map(Vec::len), Some(2));
    let application = admin
        .create(
            "/applications/",
            json!({"name": "a", "type": "private", "permissions": ["token:read"]}),
        )
        .await;
    let proxy = admin
        .create(
            "/proxies/",
            json!({"name": "p", "destination_url": "https://api.example.com"}),
        )
        .await;
    token_routes_answer_with_one_trailing_slash(&admin, &parent, &other).await;
    application_and_proxy_routes_answer_with_one_trailing_slash(&admin, &application, &proxy).await;
    for path in ["/healthz/", "/readyz/", "/openapi.json/", "/metrics/"] {
        Caller::anonymous(&app).get(path).await.expect(200);
    }
    for gone in [
        format!("/tokens/{child}/"),
        format!("/proxies/{proxy}/"),
        format!("/applications/{application}/"),
    ] {
        admin.delete(&gone).await.expect(204);
    }
    assert_eq!(admin.total("/tokens").await, json!(4));
    // One slash only, and a method a route does not take is still a 405.
    admin.get("/tokens//").await.expect(404);
    admin.get("/applications//").await.expect(404);
    admin
        .send(Method::PATCH, "/tokens/", None)
        .await
        .expect(405);
}

/// The token routes, with one trailing slash: list, get, patch, filter, search, and linking
/// and unlinking `other` as a child of `parent`.
async fn token_routes_answer_with_one_trailing_slash<S, B>(
    admin: &Caller<'_, S>,
    parent: &str,
    other: &str,
) where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    assert_eq!(admin.total("/tokens/?size=5").await, json!(5));
    assert_eq!(
        admin.page(&format!("/tokens/{parent}/")).await["data"],
        "secret"
    );
    admin
        .patch(
            &format!("/tokens/{parent}/"),
            json!({"metadata": {"k": "v"}}),
        )
        .await
        .expect(200);
    assert_eq!(admin.total("/tokens/?metadata.k=v").await, json!(1));
    admin
        .post("/tokens/search/", json!({"metadata": {"k": "v"}}))
        .await
        .expect(200);
    admin
        .post_empty(&format!("/tokens/{parent}/children/{other}/"))
        .await
        .expect(204);
    assert_eq!(
        admin.total(&format!("/tokens/{parent}/children/")).await,
        json!(2)
    );
    admin
        .delete(&format!("/tokens/{parent}/children/{other}/"))
        .await
        .expect(204);
}

/// The application and proxy routes, with one trailing slash, and the audit list.
async fn application_and_proxy_routes_answer_with_one_trailing_slash<S, B>(
    admin: &Caller<'_, S>,
    application: &str,
    proxy: &str,
) where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    assert_eq!(admin.total("/applications/").await, json!(2));
    admin
        .get(&format!("/applications/{application}/"))
        .await
        .expect(200);
    admin
        .put(
            &format!("/applications/{application}/"),
            json!({"name": "b", "type": "private", "permissions": ["token:read"]}),
        )
        .await
        .expect(200);
    let regenerate = format!("/applications/{application}/regenerate/");
    admin.post_empty(&regenerate).await.expect(200);
    assert_eq!(admin.total("/proxies/").await, json!(1));
    admin.get(&format!("/proxies/{proxy}/")).await.expect(200);
    admin
        .put(
            &format!("/proxies/{proxy}/"),
            json!({"name": "q", "destination_url": "https://api.example.com"}),
        )
        .await
        .expect(200);
    admin.get("/audit-events/?size=1").await.expect(200);
}

/// `tessera_http_requests_total{class="2xx",component="api"}`.
fn api_successes(metrics: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with(r#"tessera_http_requests_total{class="2xx",component="api"}"#))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the api's 2xx counter")
}

async fn a_trailing_slash_keeps_authentication_audit_and_metrics(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    // No key, or a bad one: the 401 of the route, not a 404.
    for key in [None, Some("key_00000000000000000000000000000000")] {
        let r = call(
            &app,
            key,
            (Method::POST, "/tokens/"),
            &[],
            Some(&token_body()),
        )
        .await
        .expect(401);
        assert!(r.body["detail"].is_string());
    }
    // Audited as the route it is: the read of `/tokens/{id}/` names the token.
    let id = admin.create("/tokens/", token_body()).await;
    admin.get(&format!("/tokens/{id}/")).await.expect(200);
    let reader = admin
        .app_key(json!({"name": "w", "type": "private", "permissions": ["token:create"]}))
        .await;
    admin
        .with_key(&reader)
        .get(&format!("/tokens/{id}/"))
        .await
        .expect(403);
    let trail = admin.page("/audit-events?action=token.read").await;
    let events = trail["data"].as_array().expect("events");
    assert_eq!(events.len(), 2, "{trail}");
    for event in events {
        assert_eq!(event["resource_ids"], json!([id]));
    }
    assert_eq!(events[0]["outcome"], "denied");
    assert_eq!(events[1]["outcome"], "success");
    // Counted once, as the api's.
    let anonymous = Caller::anonymous(&app);
    let before = api_successes(&String::from_utf8_lossy(
        &anonymous.get("/metrics").await.expect(200).raw,
    ));
    admin.get("/tokens/").await.expect(200);
    let after = api_successes(&String::from_utf8_lossy(
        &anonymous.get("/metrics/").await.expect(200).raw,
    ));
    // The first scrape and the list: the scrape counts after it has rendered.
    assert_eq!(after, before + 2);
}

/// `/tokens` and `/tokens/` are one operation, so one key covers both.
async fn a_path_and_its_trailing_slash_share_idempotency_keys(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let body = token_body();
    let (first, again) = posted_twice(admin, ("/tokens", "/tokens/"), &body, "shared").await;
    assert!(replayed(&again));
    assert_eq!(id_of(&again.body), id_of(&first.body));
    let batch = json!([token_body()]);
    let (first, again) = posted_twice(admin, ("/tokenize/", "/tokenize"), &batch, "batch").await;
    assert!(replayed(&again));
    assert_eq!(again.body, first.body);
    assert_eq!(admin.total("/tokens").await, json!(2));
}

/// Posts `body` as `admin` to `first` then to `again` under the idempotency key `key`: the two
/// 201 answers.
async fn posted_twice<S, B>(
    admin: Caller<'_, S>,
    (first, again): (&str, &str),
    body: &Value,
    key: &str,
) -> (Reply, Reply)
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let one = admin.post_once(first, body, key).await.expect(201);
    (one, admin.post_once(again, body, key).await.expect(201))
}

/// Proxy invocation is the destination's business: `/proxy/a/` forwards `/a/`.
async fn proxy_paths_keep_their_trailing_slash(db: &TestDatabase) {
    let (st, _, admin) = private_state(db).await;
    let upstream = Upstream::start(None).await;
    let proxy_key = proxy_to(&st, &admin, &upstream, json!({})).await;
    let app = with_gateway(st).await;
    for (path, forwarded) in [
        ("/proxy/a/", "/base/a/"),
        ("/proxy/a", "/base/a"),
        ("/proxy/a/?q=1", "/base/a/"),
        ("/proxy/", "/base/"),
    ] {
        let r = call(
            &app,
            None,
            (Method::GET, path),
            &[
                ("svc-proxy-key", proxy_key.as_str()),
                ("svc-trace-id", "t-1"),
            ],
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.body["path"], forwarded, "{path}");
        // The api's mount takes the SDKs' trace id like the proxy-gateway binary.
        assert_eq!(r.body["headers"]["x-request-id"], "t-1");
    }
}

fn request_id(r: &Reply) -> Option<&str> {
    r.headers.get("x-request-id").and_then(|v| v.to_str().ok())
}

async fn an_svc_trace_id_is_the_request_id_without_x_request_id(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let key = Some(t.admin_key.as_str());
    let health = (Method::GET, "/healthz");
    let r = call(
        &app,
        None,
        health.clone(),
        &[("SVC-TRACE-ID", "trace-1")],
        None,
    )
    .await;
    assert_eq!(request_id(&r), Some("trace-1"));
    let both = [("SVC-TRACE-ID", "trace-1"), ("X-Request-Id", "req-1")];
    let r = call(&app, None, health.clone(), &both, None).await;
    assert_eq!(request_id(&r), Some("req-1"));
    // Held to the same form: one that is not 1–200 visible characters is replaced.
    let r = call(&app, None, health, &[("SVC-TRACE-ID", "has space")], None).await;
    assert_eq!(request_id(&r).map(str::len), Some(36));
    // Errors carry it, and the audit trail records it.
    let r = call(
        &app,
        None,
        (Method::GET, "/tokens"),
        &[("svc-trace-id", "trace-401")],
        None,
    )
    .await
    .expect(401);
    assert_eq!(request_id(&r), Some("trace-401"));
    let created = call(
        &app,
        key,
        (Method::POST, "/tokens"),
        &[("svc-trace-id", "trace-create")],
        Some(&token_body()),
    )
    .await
    .expect(201);
    assert_eq!(request_id(&created), Some("trace-create"));
    let trail = Caller::new(&app, &t.admin_key)
        .page("/audit-events?action=token.created")
        .await;
    assert_eq!(trail["data"][0]["request_id"], "trace-create");
}

async fn putting_an_application_without_type_keeps_its_type(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin
        .create(
            "/applications",
            json!({"name": "svc", "type": "private", "permissions": ["token:read"]}),
        )
        .await;
    let path = format!("/applications/{id}");
    // As the SDKs send it: name, permissions and rules, no type.
    let updated = admin
        .put(
            &path,
            json!({"name": "svc2", "permissions": ["token:create"],
                "rules": [{"priority": 1, "container": "/pci/", "permissions": ["token:read"]}]}),
        )
        .await
        .expect(200);
    assert_eq!(updated.body["type"], "private");
    assert_eq!(updated.body["name"], "svc2");
    assert_eq!(updated.body["permissions"], json!(["token:create"]));
    assert_eq!(admin.page(&path).await["type"], "private");
    let null_type = json!({"name": "svc3", "type": null, "permissions": ["token:read"]});
    let r = admin.put(&path, null_type).await.expect(200);
    assert_eq!(r.body["type"], "private");
    // Checked against the type it keeps: a private application holds no `proxy:read`.
    let r = admin
        .put(&path, json!({"name": "svc", "permissions": ["proxy:read"]}))
        .await
        .expect(400);
    assert_eq!(r.error_fields(), vec!["permissions[0]"]);
    // With a type, as before: the type changes.
    let typed = admin
        .put(
            &path,
            json!({"name": "svc", "type": "public", "permissions": ["token:create"]}),
        )
        .await
        .expect(200);
    assert_eq!(typed.body["type"], "public");
    // Without a type, an unknown application is a 404, and the other field rules hold.
    let unknown = format!("/applications/{}", uuid_like());
    admin
        .put(
            &unknown,
            json!({"name": "x", "permissions": ["token:create"]}),
        )
        .await
        .expect(404);
    let r = admin
        .put(&path, json!({"name": "", "permissions": []}))
        .await
        .expect(400);
    assert_eq!(r.error_fields(), vec!["name", "permissions"]);
    admin
        .put(&path, json!({"permissions": ["token:create"]}))
        .await
        .expect(400);
}

fn uuid_like() -> &'static str {
    "8a2c9d52-46b3-4b1e-9f4e-1c2d3e4f5a6b"
}

/// Without `type` the no-escalation rules still hold: a narrow key can neither widen nor take
/// over nor strip a wider application.
async fn an_untyped_put_still_cannot_escalate(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let manager = admin
        .app_key(json!({"name": "mgr", "type": "management",
            "permissions": ["application:update", "application:read", "proxy:read"]}))
        .await;
    let wide = id_of(&new_application(admin, "wide", "private", &["token:read"]).await);
    let narrow = id_of(&new_application(admin, "narrow", "management", &["proxy:read"]).await);
    let as_manager = admin.with_key(&manager);
    for (id, body, missing) in [
        // Taking over (or stripping) an application holding more than the caller.
        (
            &wide,
            json!({"name": "wide", "permissions": ["token:read"]}),
            "token:read",
        ),
        // Widening one it may manage beyond its own grants.
        (
            &narrow,
            json!({"name": "narrow", "permissions": ["proxy:read", "proxy:delete"]}),
            "proxy:delete",
        ),
    ] {
        let r = as_manager
            .put(&format!("/applications/{id}"), body)
            .await
            .expect(403);
        assert!(r.body["detail"].as_str().expect("detail").contains(missing));
    }
    // Within its grants it succeeds, keeping the type.
    let ok = as_manager
        .put(
            &format!("/applications/{narrow}"),
            json!({"name": "narrower", "permissions": ["application:read"]}),
        )
        .await
        .expect(200);
    assert_eq!(ok.body["type"], "management");
    assert_eq!(
        admin.page(&format!("/applications/{wide}")).await["name"],
        "wide"
    );
}

async fn a_transform_may_say_it_is_code(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let code = "module.exports = async function (req) { return req.args; };";
    let body = |kind: Value| {
        json!({"name": "p", "destination_url": "https://api.example.com",
            "request_transform": {"type": kind, "code": code},
            "response_transform": {"code": code, "type": "code"}})
    };
    let created = admin
        .post("/proxies", body(json!("code")))
        .await
        .expect(201);
    // Answered as before: the proxy object's transforms hold `code` only.
    assert_eq!(created.body["request_transform"], json!({"code": code}));
    assert_eq!(created.body["response_transform"], json!({"code": code}));
    let id = id_of(&created.body);
    admin
        .put(&format!("/proxies/{id}"), body(Value::Null))
        .await
        .expect(200);
    for (kind, field) in [
        (json!("matcher"), "request_transform.type"),
        (json!("CODE"), "request_transform.type"),
        (json!(7), "request_transform.type"),
    ] {
        admin.refuses("/proxies", body(kind.clone()), field).await;
        let r = admin
            .put(&format!("/proxies/{id}"), body(kind))
            .await
            .expect(400);
        assert_eq!(r.error_fields(), vec![field]);
    }
    let mut response_typed = body(json!("code"));
    response_typed["response_transform"]["type"] = json!("mask");
    admin
        .refuses("/proxies", response_typed, "response_transform.type")
        .await;
    assert_eq!(admin.total("/proxies").await, json!(1));
}

async fn metadata_filters_may_be_written_as_deep_objects(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let mut made = vec![];
    for (customer, tier) in [("c1", "gold"), ("c1", "tin"), ("c2", "gold")] {
        let body = json!({"type": "token", "data": "d",
            "metadata": {"customer": customer, "tier": tier, "odd[key]": customer}});
        made.push(admin.create("/tokens", body).await);
    }
    let page = admin.page("/tokens?metadata[customer]=c1").await;
    assert_eq!(ids(&page), vec![made[0].clone(), made[1].clone()]);
    // Percent-encoded brackets, mixed with the dotted form, keys holding brackets.
    for query in [
        "metadata%5Bcustomer%5D=c1&metadata%5Btier%5D=gold",
        "metadata[customer]=c1&metadata.tier=gold",
        "metadata[odd[key]]=c1&metadata[tier]=gold",
        "metadata.odd%5Bkey%5D=c1&metadata[tier]=gold",
    ] {
        let page = admin.page(&format!("/tokens?{query}")).await;
        assert_eq!(ids(&page), vec![made[0].clone()], "{query}");
    }
    let children = admin
        .page(&format!(
            "/tokens/{}/children?metadata[customer]=c1",
            made[2]
        ))
        .await;
    assert_eq!(total(&children), &json!(0));
    // The same rules as the dotted form.
    for (query, field) in [
        ("metadata[]=x", "metadata[]"),
        ("metadata[customer=x", "metadata[customer"),
        ("metadata[k%00]=x", "metadata"),
    ] {
        let r = admin.get(&format!("/tokens?{query}")).await.expect(400);
        assert_eq!(r.error_fields(), vec![field], "{query}");
    }
    let eleven: Vec<String> = (0..11).map(|i| format!("metadata[k{i}]=v")).collect();
    let query = format!("/tokens?{}", eleven.join("&"));
    let r = admin.get(&query).await.expect(400);
    assert_eq!(r.error_fields(), vec!["metadata"]);
}

/// The SDKs' update model carries `deduplicate_token`: accepted, and nothing changes because of
/// it (a create asking to deduplicate finds any equal live token, flagged or not).
async fn deduplicate_token_on_update_is_accepted_and_changes_nothing(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin.create("/tokens", token_body()).await;
    for flag in [json!(true), json!(false), json!(null)] {
        let patch = json!({"deduplicate_token": flag, "metadata": {"k": "v"}});
        let r = admin.merge_patch(&format!("/tokens/{id}"), &patch).await;
        assert_eq!(r.expect(200).body["metadata"], json!({"k": "v"}));
    }
    let read = admin.get(&format!("/tokens/{id}")).await.expect(200).body;
    assert_eq!(read["data"], json!("secret"));
    let r = admin
        .merge_patch(
            &format!("/tokens/{id}"),
            &json!({"deduplicate_token": "yes"}),
        )
        .await
        .expect(400);
    assert_eq!(r.error_fields(), vec!["deduplicate_token"]);
}

/// What the SDKs send only when a caller sets it, for features Tessera does not have, is a 400
/// naming the field (docs/migrating.md "Differences that remain"), never silently dropped.
async fn fields_for_features_tessera_lacks_are_refused_by_name(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin.create("/tokens", token_body()).await;
    for (field, value) in [
        ("privacy", json!({"classification": "general"})),
        ("token_intent_id", json!("ti_1")),
    ] {
        let mut body = token_body();
        body[field] = value.clone();
        admin.refuses("/tokens", body.clone(), field).await;
        admin
            .refuses("/tokenize", json!([body]), &format!("[0].{field}"))
            .await;
        let r = admin
            .merge_patch(&format!("/tokens/{id}"), &json!({ field: value }))
            .await
            .expect(400);
        assert_eq!(r.error_fields(), vec![field]);
    }
    for field in [
        "request_transforms",
        "response_transforms",
        "disable_detokenization",
    ] {
        let body = json!({"name": "p", "destination_url": "https://api.example.com",
            field: if field == "disable_detokenization" { json!(true) } else { json!([]) }});
        admin.refuses("/proxies", body, field).await;
    }
    assert_eq!(admin.total("/tokens").await, json!(1));
}
