//! The management API in-process (actix's test service) over a throw-away database, with
//! helpers to send requests and check problem+json answers.

use std::sync::Arc;

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::{header::HeaderMap, Method, StatusCode},
    test, Error,
};
use serde_json::{json, Value};
use tessera_domain::{proxy::DestinationPolicy, TenantId, Vault};
use tessera_http::{ApiConfig, ApiState, ProcessMetrics};
use tessera_storage::DetachedStore;

use crate::db::TestDatabase;

/// A response, decoded.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body as JSON (`null` when it is not JSON).
    pub body: Value,
    /// The body's bytes.
    pub raw: Vec<u8>,
}

impl Reply {
    /// Asserts the status and that an error carries a problem+json body with that status.
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            String::from_utf8_lossy(&self.raw)
        );
        if status >= 400 {
            let ct = self
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            assert_eq!(ct, "application/problem+json", "errors are problem+json");
            assert_eq!(self.body["status"], json!(status), "problem status matches");
            assert_eq!(self.body["type"], json!("about:blank"));
            assert!(self.body["title"].is_string());
        }
        self
    }

    /// The `errors` keys of a problem.
    pub fn error_fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// A tenant with its admin key.
#[derive(Debug)]
pub struct TenantKeys {
    /// The tenant.
    pub tenant_id: TenantId,
    /// Its admin application's key.
    pub admin_key: String,
}

/// The API state over `db` with a fresh master key.
pub fn state(db: &TestDatabase, max_body_bytes: usize) -> ApiState {
    state_with(db, max_body_bytes, DestinationPolicy::default())
}

/// The same, with a proxy destination policy.
pub fn state_with(db: &TestDatabase, max_body_bytes: usize, policy: DestinationPolicy) -> ApiState {
    ApiState::new(
        vault_with(db, policy),
        ApiConfig {
            max_body_bytes,
            ..ApiConfig::default()
        },
        ProcessMetrics::new(),
    )
}

/// The same as [`state`], under a deployment whose permissions granted without rules show
/// token data as `implicit` (`--implicit-transform`).
pub fn state_implicit(
    db: &TestDatabase,
    max_body_bytes: usize,
    implicit: tessera_domain::DataTransform,
) -> ApiState {
    ApiState::new(
        vault_with(db, DestinationPolicy::default()).with_implicit_transform(implicit),
        ApiConfig {
            max_body_bytes,
            ..ApiConfig::default()
        },
        ProcessMetrics::new(),
    )
}

/// A vault over `db` (the shared test master key) with `policy`, recording its audit trail
/// in sync mode as a server does by default (the writer runs on the calling runtime).
pub fn vault_with(db: &TestDatabase, policy: DestinationPolicy) -> Vault {
    let store = Arc::new(DetachedStore::new(db.db.clone()));
    let (log, writer) =
        tessera_audit::start(store.clone(), tessera_domain::audit::Durability::Sync, None);
    writer.spawn().expect("audit writer");
    Vault::new(store, crate::master_key())
        .with_destination_policy(policy)
        .with_transform_check(Arc::new(tessera_transform_runtime::CompileCheck))
        .with_audit(log)
}

/// State whose proxies may target loopback (the tests' upstreams), with a tenant and its admin
/// principal.
pub async fn private_state(db: &TestDatabase) -> (ApiState, TenantKeys, tessera_domain::Principal) {
    let st = state_with(
        db,
        1024 * 1024,
        DestinationPolicy {
            allow_private_destinations: true,
        },
    );
    let t = tenant(&st, "acme").await;
    let admin = st
        .vault
        .authenticate(Some(&t.admin_key))
        .await
        .expect("admin");
    (st, t, admin)
}

/// Creates a tenant through the vault (as `api tenants create` does).
pub async fn tenant(state: &ApiState, name: &str) -> TenantKeys {
    let created = state
        .vault
        .create_tenant(name)
        .await
        .expect("create tenant");
    TenantKeys {
        tenant_id: created.tenant.id,
        admin_key: created.api_key.expose().to_string(),
    }
}

/// Sends one request.
pub async fn send<S, B>(
    app: &S,
    method: Method,
    uri: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let mut req = test::TestRequest::default().method(method).uri(uri);
    if let Some(k) = key {
        req = req.insert_header(("SVC-API-KEY", k));
    }
    if let Some(b) = body {
        req = req.set_json(b);
    }
    send_raw(app, req).await
}

/// Sends a prepared request.
pub async fn send_raw<S, B>(app: &S, req: test::TestRequest) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let res = test::call_service(app, req.to_request()).await;
    let status = res.status();
    let headers = res.headers().clone();
    let raw = test::read_body(res).await.to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
        raw,
    }
}

/// Creates an application with the admin key and returns its key.
pub async fn app_key<S, B>(app: &S, admin: &str, spec: Value) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let r = send(app, Method::POST, "/applications", Some(admin), Some(spec))
        .await
        .expect(201);
    r.body["key"].as_str().expect("key").to_string()
}

/// `POST path` with `body` as `key`, expecting 201: the created resource's `id`.
pub async fn create<S, B>(app: &S, key: &str, path: &str, body: Value) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    send(app, Method::POST, path, Some(key), Some(body))
        .await
        .expect(201)
        .body["id"]
        .as_str()
        .expect("id")
        .to_string()
}

/// One caller of the in-process management API: the app and the key it sends (or none). Tests
/// then read as the requests they make (`admin.get("/proxies")`) instead of repeating
/// [`send`]'s five arguments on every request.
pub struct Caller<'a, S> {
    app: &'a S,
    key: Option<&'a str>,
}

impl<S> Clone for Caller<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Caller<'_, S> {}

impl<S> std::fmt::Debug for Caller<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never printed.
        f.debug_struct("Caller").finish_non_exhaustive()
    }
}

impl<'a, S, B> Caller<'a, S>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    /// Calls to `app` with `key`.
    pub fn new(app: &'a S, key: &'a str) -> Self {
        Self {
            app,
            key: Some(key),
        }
    }

    /// Calls to `app` sending no key.
    pub fn anonymous(app: &'a S) -> Self {
        Self { app, key: None }
    }

    /// Another caller of the same app, sending `key`.
    pub fn with_key(&self, key: &'a str) -> Self {
        Self::new(self.app, key)
    }

    /// `method uri` with an optional JSON body.
    pub async fn send(&self, method: Method, uri: &str, body: Option<Value>) -> Reply {
        send(self.app, method, uri, self.key, body).await
    }

    /// `GET uri`.
    pub async fn get(&self, uri: &str) -> Reply {
        self.send(Method::GET, uri, None).await
    }

    /// `POST uri` with `body`.
    pub async fn post(&self, uri: &str, body: Value) -> Reply {
        self.send(Method::POST, uri, Some(body)).await
    }

    /// `POST uri` without a body (links, key regeneration).
    pub async fn post_empty(&self, uri: &str) -> Reply {
        self.send(Method::POST, uri, None).await
    }

    /// `PUT uri` with `body`.
    pub async fn put(&self, uri: &str, body: Value) -> Reply {
        self.send(Method::PUT, uri, Some(body)).await
    }

    /// `PATCH uri` with `body`.
    pub async fn patch(&self, uri: &str, body: Value) -> Reply {
        self.send(Method::PATCH, uri, Some(body)).await
    }

    /// `DELETE uri`.
    pub async fn delete(&self, uri: &str) -> Reply {
        self.send(Method::DELETE, uri, None).await
    }

    /// `req` with this caller's key, if any.
    fn keyed(&self, req: test::TestRequest) -> test::TestRequest {
        match self.key {
            Some(k) => req.insert_header(("SVC-API-KEY", k)),
            None => req,
        }
    }

    /// `POST uri` with `body` and an `Idempotency-Key`.
    pub async fn post_once(&self, uri: &str, body: &Value, idempotency_key: &str) -> Reply {
        let req = self
            .keyed(test::TestRequest::post().uri(uri))
            .insert_header(("Idempotency-Key", idempotency_key))
            .set_json(body);
        send_raw(self.app, req).await
    }

    /// `PATCH uri` with `body` as `application/merge-patch+json`.
    pub async fn merge_patch(&self, uri: &str, body: &Value) -> Reply {
        let req = self
            .keyed(test::TestRequest::patch().uri(uri))
            .insert_header(("content-type", "application/merge-patch+json"))
            .set_payload(body.to_string());
        send_raw(self.app, req).await
    }

    /// `POST uri` with `body`, expecting 201: the created resource's `id`.
    pub async fn create(&self, uri: &str, body: Value) -> String {
        id_of(&self.post(uri, body).await.expect(201).body)
    }

    /// `GET uri` expecting 200: the body.
    pub async fn page(&self, uri: &str) -> Value {
        self.get(uri).await.expect(200).body
    }

    /// `GET uri` expecting 200: its `pagination.total_items`.
    pub async fn total(&self, uri: &str) -> Value {
        total(&self.page(uri).await).clone()
    }

    /// `POST path` with `body`, expecting a 400 whose `errors` name `field`.
    pub async fn refuses(&self, path: &str, body: Value, field: &str) -> Reply {
        let r = self.post(path, body.clone()).await.expect(400);
        assert!(
            r.error_fields().iter().any(|f| f == field),
            "{body} should fail on {field}: {:?}",
            r.body
        );
        r
    }

    /// Creates an application expecting 201: its key.
    pub async fn app_key(&self, spec: Value) -> String {
        let created = self.post("/applications", spec).await.expect(201);
        created.body["key"].as_str().expect("key").to_string()
    }
}

/// `pagination.total_items` of a list page.
pub fn total(page: &Value) -> &Value {
    &page["pagination"]["total_items"]
}

/// The `id` of a resource.
pub fn id_of(resource: &Value) -> String {
    resource["id"].as_str().expect("id").to_string()
}

/// The id of the application named `name`, read with the admin key.
pub async fn application_id<S, B>(app: &S, admin: &str, name: &str) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let page = send(
        app,
        Method::GET,
        "/applications?size=100",
        Some(admin),
        None,
    )
    .await
    .expect(200);
    page.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|a| a["name"] == name)
        .and_then(|a| a["id"].as_str())
        .expect("application")
        .to_string()
}

/// The management API in-process over `db` (1 MiB bodies) with one tenant named `name`: the
/// app and the tenant's admin key, the start of most API tests.
pub async fn app_with_tenant(
    db: &TestDatabase,
    name: &str,
) -> (
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
    TenantKeys,
) {
    let st = state(db, 1024 * 1024);
    let t = tenant(&st, name).await;
    (test::init_service(tessera_http::app(st)).await, t)
}
