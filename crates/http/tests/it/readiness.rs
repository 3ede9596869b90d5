//! `/readyz` follows the database: 200 while it answers, 503 problem+json while it does not,
//! 200 again once it is back, with no restart. PostgreSQL only: the test makes the server refuse
//! a dedicated role's connections (SQLite is a file in the process and cannot go away).

use std::sync::Arc;

use actix_web::{http::StatusCode, test};
use tessera_domain::{MasterKey, Vault};
use tessera_http::{ApiConfig, ApiState, ProcessMetrics};
use tessera_storage::{Database, DatabaseUrl, DetachedStore, PoolOptions};
use tessera_testkit::db::{postgres_admin, postgres_required, PG_URL_VAR};

use crate::caller::ManagementApi;

async fn readyz<S, B>(app: &S) -> (StatusCode, String, serde_json::Value)
where
    S: ManagementApi<B>,
    B: actix_web::body::MessageBody,
{
    let res = test::call_service(app, test::TestRequest::get().uri("/readyz").to_request()).await;
    let status = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = test::read_body(res).await;
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    (status, content_type, json)
}

mod postgres {
    use super::*;

    #[actix_web::test]
    async fn readiness_follows_the_database() {
        let Ok(admin_url) = std::env::var(PG_URL_VAR) else {
            assert!(
                !postgres_required(),
                "CI=true but {PG_URL_VAR} is unset: PostgreSQL tests must run"
            );
            eprintln!("skipped: set {PG_URL_VAR} to run PostgreSQL tests");
            return;
        };
        let role = format!("tessera_ready_{}", uuid::Uuid::new_v4().simple());
        postgres_admin(&format!("CREATE ROLE {role} LOGIN")).await;
        let mut url = url::Url::parse(&admin_url).expect("admin URL");
        url.set_username(&role).expect("role in URL");
        let url: DatabaseUrl = url.as_str().parse().expect("database URL");
        let db = Database::connect(
            &url,
            PoolOptions {
                max_connections: 2,
                ..PoolOptions::default_for(&url)
            },
        )
        .await
        .expect("the new role connects (trust authentication)");
        let vault = Vault::new(Arc::new(DetachedStore::new(db)), MasterKey::generate());
        let state = ApiState::new(
            vault,
            ApiConfig {
                max_body_bytes: 1024,
                ..ApiConfig::default()
            },
            ProcessMetrics::new(),
        );
        let app = test::init_service(tessera_http::app(state)).await;

        let (status, _, body) = readyz(&app).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, serde_json::json!({"status": "ready"}));

        // The database stops accepting this process: its open connections are cut and new
        // ones refused.
        postgres_admin(&format!(
            "ALTER ROLE {role} NOLOGIN; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
        ))
        .await;
        let (status, content_type, body) = readyz(&app).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(content_type, "application/problem+json");
        assert_eq!(body["status"], 503);
        assert_eq!(body["detail"], "the database is unreachable");
        // Liveness does not depend on the database.
        let res =
            test::call_service(&app, test::TestRequest::get().uri("/healthz").to_request()).await;
        assert_eq!(res.status(), StatusCode::OK);

        postgres_admin(&format!("ALTER ROLE {role} LOGIN")).await;
        let (status, _, _) = readyz(&app).await;
        assert_eq!(status, StatusCode::OK, "ready again without a restart");

        drop(app);
        postgres_admin(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'; \
             DROP ROLE {role}"
        ))
        .await;
    }
}
