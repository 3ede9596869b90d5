//! What the management API answers before any resource is involved, on both backends: health,
//! readiness, the OpenAPI document, request ids, unknown routes and methods, and the body limit.

use actix_web::test;
use serde_json::json;
use tessera_testkit::api::{send_raw, state, tenant};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{serve, Caller, MIB};

backend_tests!(
    health_and_readiness,
    request_ids_are_echoed_or_generated,
    unknown_routes_methods_and_oversized_bodies_are_refused,
);

async fn health_and_readiness(db: &TestDatabase) {
    let app = serve(state(db, MIB)).await;
    let anonymous = Caller::anonymous(&app);
    // The build serving: outside a binary, this crate's version and an unknown commit.
    assert_eq!(
        anonymous.page("/healthz").await,
        json!({"status": "ok", "version": env!("CARGO_PKG_VERSION"), "build": "unknown"})
    );
    assert_eq!(anonymous.page("/readyz").await, json!({"status": "ready"}));
    // The OpenAPI document needs no key and is the generated one.
    let r = anonymous.get("/openapi.json").await.expect(200);
    assert_eq!(
        r.headers.get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    let generated: serde_json::Value =
        serde_json::from_str(tessera_http::openapi::json()).expect("generated document is JSON");
    assert_eq!(r.body, generated);
}

async fn request_ids_are_echoed_or_generated(db: &TestDatabase) {
    let app = serve(state(db, 1024)).await;
    let r = send_raw(
        &app,
        test::TestRequest::get()
            .uri("/healthz")
            .insert_header(("X-Request-Id", "abc-123")),
    )
    .await
    .expect(200);
    assert_eq!(
        r.headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        Some("abc-123")
    );
    let r = Caller::anonymous(&app).get("/healthz").await.expect(200);
    let generated = r
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("generated id");
    assert!(uuid::Uuid::parse_str(generated).is_ok());
}

async fn unknown_routes_methods_and_oversized_bodies_are_refused(db: &TestDatabase) {
    let st = state(db, 1024);
    let t = tenant(&st, "acme").await;
    let app = serve(st).await;
    let r = Caller::anonymous(&app)
        .get("/no/such/route")
        .await
        .expect(404);
    assert!(r.headers.contains_key("x-request-id"));
    let admin = Caller::new(&app, &t.admin_key);
    admin
        .send(actix_web::http::Method::PATCH, "/tokens", None)
        .await
        .expect(405);
    let big = json!({"type": "token", "data": "x".repeat(2048)});
    let r = admin.post("/tokens", big).await.expect(413);
    assert!(r.headers.contains_key("x-request-id"));
    assert_eq!(admin.total("/tokens").await, json!(0));
}
