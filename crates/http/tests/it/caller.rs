//! The management API tests' fixtures: the app over one or two tenants in one line, and
//! testkit's [`Caller`] (the app and the key it sends), so tests read as the requests they
//! make (`admin.get("/proxies")`).

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    test, Error,
};
use serde_json::{json, Value};
use std::sync::Arc;
use tessera_domain::{Principal, ProxyInput};
use tessera_http::ApiState;
pub(crate) use tessera_testkit::api::{id_of, total};
use tessera_testkit::api::{state, tenant, TenantKeys};
use tessera_testkit::{
    db::TestDatabase,
    gateway::{self, Options},
    upstream::Upstream,
};

/// The request body limit most tests run with.
pub(crate) const MIB: usize = 1024 * 1024;

/// The management API over `state`, as actix's test service.
pub(crate) async fn serve(
    state: ApiState,
) -> impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>
{
    test::init_service(tessera_http::app(state)).await
}

/// The management API over `state` with the in-process gateway mounted at `/proxy`.
pub(crate) async fn with_gateway(
    state: ApiState,
) -> impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>
{
    let gateway = gateway::build(&state.vault, &Options::default(), &state.metrics.registry);
    serve(state.with_proxy(Arc::new(gateway))).await
}

/// `POST /proxy/x` with the proxy key `key` and the JSON body `{"a": 1}`.
pub(crate) fn proxy_post(key: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/proxy/x")
        .insert_header(("svc-proxy-key", key))
        .set_json(json!({"a": 1}))
}

/// Creates the proxy "p" to `upstream`'s `/base`, without auth and with the `extra` fields, as
/// `admin` in `state`: its key.
pub(crate) async fn proxy_to(
    state: &ApiState,
    admin: &Principal,
    upstream: &Upstream,
    extra: Value,
) -> String {
    let mut spec = json!({"name": "p",
        "destination_url": format!("http://127.0.0.1:{}/base", upstream.addr.port()),
        "require_auth": false});
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    let input: ProxyInput = serde_json::from_value(spec).expect("input");
    let proxy = state.vault.create_proxy(admin, input).await.expect("proxy");
    proxy.key.expose().clone()
}

/// The management API over `state` with one tenant, "acme".
pub(crate) async fn with_tenant(
    state: ApiState,
) -> (
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
    TenantKeys,
) {
    let t = tenant(&state, "acme").await;
    (serve(state).await, t)
}

/// The management API over `db` (1 MiB bodies) with one tenant, "acme".
pub(crate) async fn one_tenant(
    db: &TestDatabase,
) -> (
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
    TenantKeys,
) {
    with_tenant(state(db, MIB)).await
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

/// Creates the application `name` of type `kind` holding `permissions` as `admin`: its body as
/// created.
pub(crate) async fn new_application<S, B>(
    admin: Caller<'_, S>,
    name: &str,
    kind: &str,
    permissions: &[&str],
) -> Value
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let spec = json!({"name": name, "type": kind, "permissions": permissions});
    admin.post("/applications", spec).await.expect(201).body
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

pub(crate) use tessera_testkit::api::Caller;
