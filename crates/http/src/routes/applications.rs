//! `/applications`: CRUD and key regeneration (SUPPLEMENT §2.2).

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{audit::AuditAction, ApplicationId, ApplicationInput, ApplicationUpdate};

use crate::problem::Problem;

use super::{parse_id, recorded};
use crate::{
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::{ApplicationView, PageView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(create, list, get, update, delete, regenerate))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/applications")
            .wrap(from_fn(crate::idempotency::idempotent))
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(create))
            .route(web::get().to(list)),
    )
    .service(
        web::resource("/applications/{id}")
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    )
    .service(
        web::resource("/applications/{id}/regenerate")
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(regenerate)),
    );
}

/// Creates an application. The response is the only time its key is shown.
#[utoipa::path(post, path = "/applications", tag = "applications",
    request_body = ApplicationInput,
    responses((status = 201, description = "Created; `key` holds the new API key.", body = ApplicationView)))]
async fn create(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<ApplicationInput>,
) -> Result<HttpResponse, ApiError> {
    let issued = state.vault.create_application(&caller, input).await?;
    let id = *issued.application.id.as_uuid();
    recorded::created(
        ApplicationView::issued(issued),
        AuditAction::ApplicationCreated,
        [id],
    )
}

/// Lists the tenant's applications, oldest first.
#[utoipa::path(get, path = "/applications", tag = "applications",
    params(crate::query::PageParams),
    responses((status = 200, description = "A page of applications.", body = PageView<ApplicationView>)))]
async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = query::page_only(req.query_string())?;
    let apps = state.vault.list_applications(&caller, page).await?;
    Ok(HttpResponse::Ok().json(PageView::new(apps, ApplicationView::new)))
}

/// Reads an application (never its key).
#[utoipa::path(get, path = "/applications/{id}", tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
    responses((status = 200, description = "The application.", body = ApplicationView)))]
async fn get(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    let app = state.vault.get_application(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ApplicationView::new(app)))
}

/// Replaces an application's name, permissions and rules, and its type when `type` is given
/// (left out, the type is kept). The key is unchanged.
#[utoipa::path(put, path = "/applications/{id}", tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
    request_body = ApplicationUpdate,
    responses((status = 200, description = "The updated application.", body = ApplicationView)))]
async fn update(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
    JsonBody(input): JsonBody<ApplicationUpdate>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    let app = state.vault.update_application(&caller, id, input).await?;
    recorded::ok(
        ApplicationView::new(app),
        AuditAction::ApplicationUpdated,
        [*id.as_uuid()],
    )
}

/// Deletes an application; its key stops working at once.
#[utoipa::path(delete, path = "/applications/{id}", tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 409, description = "Proxies still use the application; `detail` names them.",
            body = Problem, content_type = "application/problem+json")))]
async fn delete(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    state.vault.delete_application(&caller, id).await?;
    recorded::no_content(AuditAction::ApplicationDeleted, [*id.as_uuid()])
}

/// Issues a new key; the old one stops working at once.
#[utoipa::path(post, path = "/applications/{id}/regenerate", tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
    responses((status = 200, description = "The application with its new `key`.", body = ApplicationView)))]
async fn regenerate(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    let issued = state.vault.regenerate_application_key(&caller, id).await?;
    let view = ApplicationView::issued(issued);
    recorded::ok(
        view,
        AuditAction::ApplicationKeyRegenerated,
        [*id.as_uuid()],
    )
}
