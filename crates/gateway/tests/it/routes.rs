//! The gateway's routes besides `/proxy`: `/healthz` (with the build serving), `/readyz`, and
//! problem+json 404s for anything else.

use http::Method;
use serde_json::json;
use tessera_testkit::{backend_tests, db::TestDatabase, gateway::Harness};

backend_tests!(
    healthz_answers_ok,
    readyz_answers_ok_with_the_database_up,
    an_unknown_route_is_a_problem_json_404,
);

async fn healthz_answers_ok(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = g.call(Method::GET, "/healthz", &[], "").await.expect(200);
    // The build serving: outside a binary, this crate's version and an unknown commit.
    assert_eq!(
        r.body,
        json!({"status": "ok", "version": env!("CARGO_PKG_VERSION"), "build": "unknown"})
    );
}

async fn readyz_answers_ok_with_the_database_up(db: &TestDatabase) {
    let g = Harness::start(db).await;
    g.call(Method::GET, "/readyz", &[], "").await.expect(200);
}

async fn an_unknown_route_is_a_problem_json_404(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let r = g.call(Method::GET, "/nope", &[], "").await.expect(404);
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
}
