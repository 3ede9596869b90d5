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
        ApiConfig { max_body_bytes },
        ProcessMetrics::new(),
    )
}

/// A vault over `db` (the shared test master key) with `policy`, recording its audit trail
/// in sync mode as a server does by default (the writer runs on the calling runtime).
pub fn vault_with(db: &TestDatabase, policy: DestinationPolicy) -> Vault {
    let (vault, writer) = Vault::new(
        Arc::new(DetachedStore::new(db.db.clone())),
        crate::master_key(),
    )
    .with_destination_policy(policy)
    .with_transform_check(Arc::new(tessera_transform_runtime::CompileCheck))
    .with_audit_trail(tessera_domain::audit::Durability::Sync, None);
    tokio::spawn(writer.run());
    vault
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

/// One API key's calls to an app: [`send`] without repeating the app and the key, so a test
/// reads as the requests it makes.
pub struct Caller<'a, S> {
    app: &'a S,
    key: &'a str,
}

impl<S> std::fmt::Debug for Caller<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never printed.
        f.debug_struct("Caller").finish_non_exhaustive()
    }
}

impl<'a, S> Caller<'a, S> {
    /// Calls to `app` with `key`.
    pub fn new(app: &'a S, key: &'a str) -> Self {
        Self { app, key }
    }

    /// `method uri` with an optional JSON body.
    pub async fn send<B>(&self, method: Method, uri: &str, body: Option<Value>) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        send(self.app, method, uri, Some(self.key), body).await
    }

    /// `GET uri`.
    pub async fn get<B>(&self, uri: &str) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        self.send(Method::GET, uri, None).await
    }

    /// `POST uri` with `body`.
    pub async fn post<B>(&self, uri: &str, body: Value) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        self.send(Method::POST, uri, Some(body)).await
    }

    /// `PUT uri` with `body`.
    pub async fn put<B>(&self, uri: &str, body: Value) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        self.send(Method::PUT, uri, Some(body)).await
    }

    /// `PATCH uri` with `body`.
    pub async fn patch<B>(&self, uri: &str, body: Value) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        self.send(Method::PATCH, uri, Some(body)).await
    }

    /// `DELETE uri`.
    pub async fn delete<B>(&self, uri: &str) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        self.send(Method::DELETE, uri, None).await
    }

    /// `POST uri` with `body` and an `Idempotency-Key`.
    pub async fn post_once<B>(&self, uri: &str, body: &Value, idempotency_key: &str) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        let req = test::TestRequest::post()
            .uri(uri)
            .insert_header(("SVC-API-KEY", self.key))
            .insert_header(("Idempotency-Key", idempotency_key))
            .set_json(body);
        send_raw(self.app, req).await
    }

    /// `PATCH uri` with `body` as `application/merge-patch+json`.
    pub async fn merge_patch<B>(&self, uri: &str, body: &Value) -> Reply
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        let req = test::TestRequest::patch()
            .uri(uri)
            .insert_header(("SVC-API-KEY", self.key))
            .insert_header(("content-type", "application/merge-patch+json"))
            .set_payload(body.to_string());
        send_raw(self.app, req).await
    }

    /// `POST uri` with `body`, expecting 201: the created resource's `id`.
    pub async fn create<B>(&self, uri: &str, body: Value) -> String
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
        B: MessageBody,
    {
        create(self.app, self.key, uri, body).await
    }
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
