//! `/audit-events`: the caller's tenant's audit trail.

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};

use crate::paths::AUDIT_EVENTS;
use crate::{
    auth::{self, Caller},
    problem::ApiError,
    query,
    state::ApiState,
    views::{AuditEventView, PageView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(list))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(AUDIT_EVENTS)
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(list)),
    );
}

/// Lists the tenant's audit events, newest first. Every given filter must match; `action`
/// may repeat (any of them). Needs `audit:read`. Another tenant's events are never listed.
#[utoipa::path(get, path = AUDIT_EVENTS, tag = "audit",
    params(crate::query::AuditListParams, crate::query::PageParams),
    responses((status = 200, description = "A page of events, newest first.", body = PageView<AuditEventView>)))]
async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = query::audit_list(req.query_string())?;
    let events = state
        .vault
        .list_audit_events(&caller, &q.filter, q.page)
        .await?;
    Ok(HttpResponse::Ok().json(PageView::new(events, AuditEventView::new)))
}
