//! `/proxies`: pre-configured proxy management (docs/api.md, "Proxies").

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{audit::AuditAction, ProxyId, ProxyInput, ProxyPatch};

use super::{parse_id, recorded};
use crate::paths::{PROXIES, PROXY};
use crate::{
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::{PageView, ProxyView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(create, list, get, update, patch, delete))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(PROXIES)
            .wrap(from_fn(crate::idempotency::idempotent))
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(create))
            .route(web::get().to(list)),
    )
    .service(
        web::resource(PROXY)
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::patch().to(patch))
            .route(web::delete().to(delete)),
    );
}

/// Creates a pre-configured proxy; the response holds its generated `key`.
#[utoipa::path(post, path = PROXIES, tag = "proxies",
    request_body = ProxyInput,
    responses((status = 201, description = "Created (no `modified_*` fields).", body = ProxyView)))]
async fn create(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<ProxyInput>,
) -> Result<HttpResponse, ApiError> {
    let proxy = state.vault.create_proxy(&caller, input).await?;
    let id = *proxy.id.as_uuid();
    recorded::created(ProxyView::created(proxy), AuditAction::ProxyCreated, [id])
}

/// Lists proxies, oldest first.
#[utoipa::path(get, path = PROXIES, tag = "proxies",
    params(crate::query::ProxyListParams, crate::query::PageParams),
    responses((status = 200, description = "A page of proxies.", body = PageView<ProxyView>)))]
async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = query::proxy_list(req.query_string())?;
    let proxies = state.vault.list_proxies(&caller, &q.filter, q.page).await?;
    Ok(HttpResponse::Ok().json(PageView::new(proxies, ProxyView::full)))
}

/// Reads a proxy.
#[utoipa::path(get, path = PROXY, tag = "proxies", params(("id" = uuid::Uuid, Path, description = "The proxy id.")),
    responses((status = 200, description = "The proxy.", body = ProxyView)))]
async fn get(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ProxyId = parse_id(&id, "proxy")?;
    let proxy = state.vault.get_proxy(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ProxyView::full(proxy)))
}

/// Replaces a proxy's settings; its key is unchanged.
#[utoipa::path(put, path = PROXY, tag = "proxies", params(("id" = uuid::Uuid, Path, description = "The proxy id.")),
    request_body = ProxyInput,
    responses((status = 200, description = "The updated proxy.", body = ProxyView)))]
async fn update(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
    JsonBody(input): JsonBody<ProxyInput>,
) -> Result<HttpResponse, ApiError> {
    let id: ProxyId = parse_id(&id, "proxy")?;
    let proxy = state.vault.update_proxy(&caller, id, input).await?;
    recorded::ok(
        ProxyView::full(proxy),
        AuditAction::ProxyUpdated,
        [*id.as_uuid()],
    )
}

/// Updates a proxy with a JSON merge patch (RFC 7396; `application/merge-patch+json` or
/// `application/json`): present fields replace, `null` removes an optional field (`name` and
/// `destination_url` cannot be removed), `configuration` is merged key by key. The result is
/// checked as `PUT` checks its body; the key is unchanged.
#[utoipa::path(patch, path = PROXY, tag = "proxies", params(("id" = uuid::Uuid, Path, description = "The proxy id.")),
    request_body(content = ProxyPatch, content_type = "application/merge-patch+json"),
    responses((status = 200, description = "The updated proxy.", body = ProxyView)))]
async fn patch(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
    JsonBody(patch): JsonBody<ProxyPatch>,
) -> Result<HttpResponse, ApiError> {
    let id: ProxyId = parse_id(&id, "proxy")?;
    let proxy = state.vault.patch_proxy(&caller, id, patch).await?;
    recorded::ok(
        ProxyView::full(proxy),
        AuditAction::ProxyUpdated,
        [*id.as_uuid()],
    )
}

/// Deletes a proxy; its key stops working.
#[utoipa::path(delete, path = PROXY, tag = "proxies", params(("id" = uuid::Uuid, Path, description = "The proxy id.")),
    responses((status = 204, description = "Deleted.")))]
async fn delete(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ProxyId = parse_id(&id, "proxy")?;
    state.vault.delete_proxy(&caller, id).await?;
    recorded::no_content(AuditAction::ProxyDeleted, [*id.as_uuid()])
}
