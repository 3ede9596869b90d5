//! The management API under `--header-prefix BT` (docs/migrating.md), on both backends: the
//! key is `BT-API-KEY`, the idempotency alias `BT-IDEMPOTENCY-KEY`, the correlation id
//! `BT-TRACE-ID`; the default `SVC-*` names are not read in their place.

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    test, Error,
};
use serde_json::json;
use tessera_service::header_names::HeaderNames;
use tessera_testkit::{
    api::{send_raw, state, tenant, Reply, TenantKeys},
    backend_tests,
    db::TestDatabase,
};

use crate::caller::id_of;

backend_tests!(
    the_chosen_api_key_header_authenticates_and_the_default_does_not,
    the_chosen_idempotency_alias_replays_and_the_default_is_not_read,
    the_chosen_trace_id_is_the_request_id,
);

/// An app whose deployment uses the prefix `BT`, with one tenant.
async fn bt_app(
    db: &TestDatabase,
) -> (
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
    TenantKeys,
) {
    let mut st = state(db, 1024 * 1024);
    st.config.names = HeaderNames::new("BT").expect("prefix");
    let t = tenant(&st, "acme").await;
    (test::init_service(tessera_http::app(st)).await, t)
}

/// `method uri` with `headers` and an optional token body.
async fn call<S, B>(
    app: &S,
    (method, uri): (Method, &str),
    headers: &[(&str, &str)],
    body: bool,
) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let mut req = test::TestRequest::default().method(method).uri(uri);
    for (name, value) in headers {
        req = req.insert_header((*name, *value));
    }
    if body {
        req = req.set_json(json!({"type": "token", "data": "secret"}));
    }
    send_raw(app, req).await
}

async fn the_chosen_api_key_header_authenticates_and_the_default_does_not(db: &TestDatabase) {
    let (app, t) = bt_app(db).await;
    let list = (Method::GET, "/tokens");
    call(&app, list.clone(), &[("BT-API-KEY", &t.admin_key)], false)
        .await
        .expect(200);
    call(&app, list.clone(), &[("bt-api-key", &t.admin_key)], false)
        .await
        .expect(200);
    call(&app, list, &[("SVC-API-KEY", &t.admin_key)], false)
        .await
        .expect(401);
}

async fn the_chosen_idempotency_alias_replays_and_the_default_is_not_read(db: &TestDatabase) {
    let (app, t) = bt_app(db).await;
    let post = (Method::POST, "/tokens");
    let key = ("BT-API-KEY", t.admin_key.as_str());
    let first = call(
        &app,
        post.clone(),
        &[key, ("BT-IDEMPOTENCY-KEY", "k-1")],
        true,
    )
    .await
    .expect(201);
    let again = call(
        &app,
        post.clone(),
        &[key, ("bt-idempotency-key", "k-1")],
        true,
    )
    .await
    .expect(201);
    assert_eq!(id_of(&again.body), id_of(&first.body));
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    // `Idempotency-Key` shares the key space; a different value beside it is a 400 naming the
    // deployment's header.
    let standard = call(&app, post.clone(), &[key, ("Idempotency-Key", "k-1")], true)
        .await
        .expect(201);
    assert_eq!(id_of(&standard.body), id_of(&first.body));
    let r = call(
        &app,
        post.clone(),
        &[key, ("Idempotency-Key", "a"), ("BT-IDEMPOTENCY-KEY", "b")],
        true,
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["BT-IDEMPOTENCY-KEY"]);
    // `SVC-IDEMPOTENCY-KEY` is no idempotency key under `BT`: each call creates.
    let one = call(
        &app,
        post.clone(),
        &[key, ("SVC-IDEMPOTENCY-KEY", "k-9")],
        true,
    )
    .await
    .expect(201);
    let two = call(&app, post, &[key, ("SVC-IDEMPOTENCY-KEY", "k-9")], true)
        .await
        .expect(201);
    assert_ne!(id_of(&one.body), id_of(&two.body));
}

async fn the_chosen_trace_id_is_the_request_id(db: &TestDatabase) {
    let (app, _) = bt_app(db).await;
    let health = (Method::GET, "/healthz");
    let r = call(&app, health.clone(), &[("BT-TRACE-ID", "trace-1")], false).await;
    assert_eq!(
        r.headers.get("x-request-id").map(|v| v.as_bytes()),
        Some(&b"trace-1"[..])
    );
    let r = call(&app, health, &[("SVC-TRACE-ID", "trace-2")], false).await;
    assert_ne!(
        r.headers.get("x-request-id").map(|v| v.as_bytes()),
        Some(&b"trace-2"[..]),
        "the default name is not read under BT"
    );
}
