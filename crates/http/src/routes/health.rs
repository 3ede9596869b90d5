//! Liveness and readiness probes and metrics (no key needed). The OpenAPI document is served
//! by the `openapi` module, which it describes.

use actix_web::{http::StatusCode, web, HttpResponse};
use serde::Serialize;

use crate::paths::{HEALTHZ, METRICS, READYZ};
use crate::{problem::ApiError, problem::Problem, state::ApiState};

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(HEALTHZ, web::get().to(healthz))
        .route(READYZ, web::get().to(readyz))
        .route(METRICS, web::get().to(metrics));
}

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(healthz, readyz, metrics))]
pub(super) struct Doc;

/// The body of the probes.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Status {
    /// `ok` (alive) or `ready` (can serve).
    #[schema(value_type = String, example = "ok")]
    status: &'static str,
    /// `/healthz` only: the semantic version serving.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "0.2.0")]
    version: Option<&'static str>,
    /// `/healthz` only: the commit it was built from (`unknown` outside a git build).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "61ee103c2a9d")]
    build: Option<&'static str>,
}

/// The process is up, and which build it is.
#[utoipa::path(get, path = HEALTHZ, tag = "operations", security(()),
    responses((status = 200, description = "The process is alive.", body = Status)))]
async fn healthz() -> HttpResponse {
    let build = tessera_service::build_info::current();
    HttpResponse::Ok().json(Status {
        status: "ok",
        version: Some(build.version),
        build: Some(build.commit),
    })
}

/// The process can reach its database.
#[utoipa::path(get, path = READYZ, tag = "operations", security(()),
    responses(
        (status = 200, description = "The database answers.", body = Status),
        (status = 503, description = "The database is unreachable.", body = Problem,
            content_type = "application/problem+json")))]
async fn readyz(state: web::Data<ApiState>) -> Result<HttpResponse, ApiError> {
    match state.vault.store().ping().await {
        Ok(()) => Ok(HttpResponse::Ok().json(Status {
            status: "ready",
            version: None,
            build: None,
        })),
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
#[utoipa::path(get, path = METRICS, tag = "operations", security(()),
    responses((status = 200, description = "Prometheus text exposition format.", body = String,
        content_type = "text/plain")))]
async fn metrics(state: web::Data<ApiState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(tessera_service::metrics::CONTENT_TYPE)
        .body(state.metrics.registry.render())
}
