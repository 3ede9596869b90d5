//! Liveness and readiness probes (no key needed).

use actix_web::{http::StatusCode, web, HttpResponse};
use serde_json::json;

use crate::{problem::ApiError, state::ApiState};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics));
}

/// The process is up.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The process can reach its database.
async fn readyz(state: web::Data<ApiState>) -> Result<HttpResponse, ApiError> {
    match state.vault.store().ping().await {
        Ok(()) => Ok(HttpResponse::Ok().json(json!({"status": "ready"}))),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the database is unreachable",
            ))
        }
    }
}

/// Prometheus metrics (no key; counts only, no tenant data).
async fn metrics(state: web::Data<ApiState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(crate::metrics::METRICS_CONTENT_TYPE)
        .body(state.metrics.render())
}
