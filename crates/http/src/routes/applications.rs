//! `/applications`: CRUD, the calling application, and each application's keys (docs/api.md,
//! "Applications" and "Application keys").

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::AuditAction, ApplicationId, ApplicationInput, ApplicationKeyId, ApplicationUpdate,
};

use crate::problem::Problem;

use super::{parse_id, recorded};
use crate::paths::{
    APPLICATION, APPLICATIONS, APPLICATION_BY_KEY, APPLICATION_KEY, APPLICATION_KEYS, REGENERATE,
};
use crate::{
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::{ApplicationKeyView, ApplicationView, PageView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create, list, get, update, delete, regenerate, get_by_key, create_key, list_keys, get_key,
    delete_key
))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(APPLICATIONS)
            .wrap(from_fn(crate::idempotency::idempotent))
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(create))
            .route(web::get().to(list)),
    )
    // Before `/applications/{id}`, which would take `key` for an id.
    .service(
        web::resource(APPLICATION_BY_KEY)
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get_by_key)),
    )
    .service(
        web::resource(APPLICATION)
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    )
    .service(
        web::resource(REGENERATE)
            .wrap(from_fn(crate::idempotency::idempotent))
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(regenerate)),
    )
    .service(
        web::resource(APPLICATION_KEYS)
            .wrap(from_fn(crate::idempotency::idempotent))
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(create_key))
            .route(web::get().to(list_keys)),
    )
    .service(
        web::resource(APPLICATION_KEY)
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get_key))
            .route(web::delete().to(delete_key)),
    );
}

/// Creates an application. The response is the only time its key is shown; with
/// `create_key: false` it has none, and keys are added through `/applications/{id}/keys`.
#[utoipa::path(post, path = APPLICATIONS, tag = "applications",
    request_body = ApplicationInput,
    responses((status = 201, description = "Created; `key` holds the new API key (absent with `create_key: false`).", body = ApplicationView)))]
async fn create(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<ApplicationInput>,
) -> Result<HttpResponse, ApiError> {
    let created = state.vault.add_application(&caller, input).await?;
    let id = *created.application.id.as_uuid();
    recorded::created(
        ApplicationView::created(created),
        AuditAction::ApplicationCreated,
        [id],
    )
}

/// Lists the tenant's applications, oldest first; `id` and `type` (each repeatable) filter.
#[utoipa::path(get, path = APPLICATIONS, tag = "applications",
    params(crate::query::PageParams, crate::query::ApplicationListParams),
    responses((status = 200, description = "A page of applications; a page past the end has no `data`.", body = PageView<ApplicationView>)))]
async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = query::application_list(req.query_string())?;
    let apps = state
        .vault
        .find_applications(&caller, &q.filter, q.page)
        .await?;
    Ok(HttpResponse::Ok().json(PageView::new(apps, ApplicationView::new)))
}

/// The application of the calling key: any valid key may read it, without a permission.
#[utoipa::path(get, path = APPLICATION_BY_KEY, tag = "applications",
    responses((status = 200, description = "The calling application (never its key).", body = ApplicationView)))]
async fn get_by_key(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
) -> Result<HttpResponse, ApiError> {
    let app = state.vault.calling_application(&caller).await?;
    Ok(HttpResponse::Ok().json(ApplicationView::new(app)))
}

/// Reads an application (never its key).
#[utoipa::path(get, path = APPLICATION, tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
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
#[utoipa::path(put, path = APPLICATION, tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
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
#[utoipa::path(delete, path = APPLICATION, tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
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

/// Revokes every key of the application and issues one; the old ones stop working at once.
#[utoipa::path(post, path = REGENERATE, tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
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

/// The application and key ids of a key's path.
fn key_path(path: &(String, String)) -> Result<(ApplicationId, ApplicationKeyId), ApiError> {
    Ok((
        parse_id(&path.0, "application")?,
        parse_id(&path.1, "application key")?,
    ))
}

/// Adds a key to the application (`application:update`, and every grant of the application).
/// The response is the only time the key is shown.
#[utoipa::path(post, path = APPLICATION_KEYS, tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
    responses((status = 201, description = "The new key; `key` is shown this once.", body = ApplicationKeyView)))]
async fn create_key(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    let issued = state.vault.create_application_key(&caller, id).await?;
    let key_id = *issued.key.id.as_uuid();
    recorded::created(
        ApplicationKeyView::issued(issued),
        AuditAction::ApplicationKeyCreated,
        [*id.as_uuid(), key_id],
    )
}

/// The application's keys (`application:read`), oldest first, without their secrets: a bare
/// JSON array. It takes no query parameters.
#[utoipa::path(get, path = APPLICATION_KEYS, tag = "applications", params(("id" = uuid::Uuid, Path, description = "The application id.")),
    responses((status = 200, description = "Its keys.", body = Vec<ApplicationKeyView>)))]
async fn list_keys(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    query::none(req.query_string())?;
    let id: ApplicationId = parse_id(&id, "application")?;
    let keys = state.vault.application_keys(&caller, id).await?;
    let views: Vec<ApplicationKeyView> = keys.into_iter().map(ApplicationKeyView::new).collect();
    Ok(HttpResponse::Ok().json(views))
}

/// One key of the application (`application:read`), without its secret.
#[utoipa::path(get, path = APPLICATION_KEY, tag = "applications",
    params(("id" = uuid::Uuid, Path, description = "The application id."),
           ("key_id" = uuid::Uuid, Path, description = "The key id.")),
    responses((status = 200, description = "The key.", body = ApplicationKeyView)))]
async fn get_key(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, key_id) = key_path(&path)?;
    let key = state.vault.application_key(&caller, id, key_id).await?;
    Ok(HttpResponse::Ok().json(ApplicationKeyView::new(key)))
}

/// Revokes one key (`application:update`, and every grant of the application); it stops
/// working at once.
#[utoipa::path(delete, path = APPLICATION_KEY, tag = "applications",
    params(("id" = uuid::Uuid, Path, description = "The application id."),
           ("key_id" = uuid::Uuid, Path, description = "The key id.")),
    responses((status = 204, description = "Revoked.")))]
async fn delete_key(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, key_id) = key_path(&path)?;
    state
        .vault
        .revoke_application_key(&caller, id, key_id)
        .await?;
    recorded::no_content(
        AuditAction::ApplicationKeyRevoked,
        [*id.as_uuid(), *key_id.as_uuid()],
    )
}
