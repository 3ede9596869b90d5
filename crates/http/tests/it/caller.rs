//! One caller of the in-process management API: the app and the key it sends. Tests then read
//! as the requests they make (`admin.get("/proxies")`) instead of repeating `send`'s five
//! arguments on every request, and set up a tenant in one line.

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    test, Error,
};
use serde_json::Value;
use tessera_http::ApiState;
use tessera_testkit::api::{send, state, tenant, Reply, TenantKeys};
use tessera_testkit::db::TestDatabase;

/// The request body limit most tests run with.
pub(crate) const MIB: usize = 1024 * 1024;

/// The management API over `state`, as actix's test service.
pub(crate) async fn serve(
    state: ApiState,
) -> impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>
{
    test::init_service(tessera_http::app(state)).await
}

/// The management API over `db` (1 MiB bodies) with one tenant, "acme".
pub(crate) async fn one_tenant(
    db: &TestDatabase,
) -> (
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
    TenantKeys,
) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    (serve(st).await, t)
}

/// The management API over `db` (1 MiB bodies) with two tenants, "a" and "b".
pub(crate) async fn two_tenants(
    db: &TestDatabase,
) -> (
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
    TenantKeys,
    TenantKeys,
) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    (serve(st).await, a, b)
}

/// `pagination.total_items` of a list page.
pub(crate) fn total(page: &Value) -> &Value {
    &page["pagination"]["total_items"]
}

/// The `id`s of a list page's items, in order.
pub(crate) fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(id_of)
        .collect()
}

/// The `id` of a resource.
pub(crate) fn id_of(resource: &Value) -> String {
    resource["id"].as_str().expect("id").to_string()
}

/// The in-process management API as actix's test service, whatever its body type `B`: the
/// bound fixtures that take a [`Caller`] repeat.
pub(crate) trait ManagementApi<B>:
    Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>
{
}

impl<S, B> ManagementApi<B> for S where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>
{
}

/// Sends requests to `app` with `key` (or none).
pub(crate) struct Caller<'a, S> {
    app: &'a S,
    key: Option<&'a str>,
}

impl<S> Clone for Caller<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Caller<'_, S> {}

impl<'a, S, B> Caller<'a, S>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    /// A caller sending `key`.
    pub(crate) fn new(app: &'a S, key: &'a str) -> Self {
        Self {
            app,
            key: Some(key),
        }
    }

    /// A caller sending no key.
    pub(crate) fn anonymous(app: &'a S) -> Self {
        Self { app, key: None }
    }

    /// Another caller of the same app, sending `key`.
    pub(crate) fn with_key(&self, key: &'a str) -> Self {
        Self::new(self.app, key)
    }

    /// Sends one request.
    pub(crate) async fn send(&self, method: Method, uri: &str, body: Option<Value>) -> Reply {
        send(self.app, method, uri, self.key, body).await
    }

    /// `GET uri`.
    pub(crate) async fn get(&self, uri: &str) -> Reply {
        self.send(Method::GET, uri, None).await
    }

    /// `POST uri` with a JSON body.
    pub(crate) async fn post(&self, uri: &str, body: Value) -> Reply {
        self.send(Method::POST, uri, Some(body)).await
    }

    /// `POST uri` without a body (links, key regeneration).
    pub(crate) async fn post_empty(&self, uri: &str) -> Reply {
        self.send(Method::POST, uri, None).await
    }

    /// `PUT uri` with a JSON body.
    pub(crate) async fn put(&self, uri: &str, body: Value) -> Reply {
        self.send(Method::PUT, uri, Some(body)).await
    }

    /// `DELETE uri`.
    pub(crate) async fn delete(&self, uri: &str) -> Reply {
        self.send(Method::DELETE, uri, None).await
    }

    /// `POST path` expecting 201: the created resource's `id`.
    pub(crate) async fn create(&self, path: &str, body: Value) -> String {
        id_of(&self.post(path, body).await.expect(201).body)
    }

    /// `GET uri` expecting 200: the body.
    pub(crate) async fn page(&self, uri: &str) -> Value {
        self.get(uri).await.expect(200).body
    }

    /// `GET uri` expecting 200: its `pagination.total_items`.
    pub(crate) async fn total(&self, uri: &str) -> Value {
        total(&self.page(uri).await).clone()
    }

    /// `POST path` with `body`, expecting a 400 whose `errors` name `field`.
    pub(crate) async fn refuses(&self, path: &str, body: Value, field: &str) -> Reply {
        let r = self.post(path, body.clone()).await.expect(400);
        assert!(
            r.error_fields().iter().any(|f| f == field),
            "{body} should fail on {field}: {:?}",
            r.body
        );
        r
    }

    /// Creates an application expecting 201: its key.
    pub(crate) async fn app_key(&self, spec: Value) -> String {
        let created = self.post("/applications", spec).await.expect(201);
        created.body["key"].as_str().expect("key").to_string()
    }
}
