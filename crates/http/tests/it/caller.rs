//! The management API tests' fixtures: the app over one or two tenants in one line, and
//! testkit's [`Caller`] (the app and the key it sends), so tests read as the requests they
//! make (`admin.get("/proxies")`).

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    test, Error,
};
use serde_json::Value;
use tessera_http::ApiState;
pub(crate) use tessera_testkit::api::{id_of, total};
use tessera_testkit::api::{state, tenant, TenantKeys};
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
