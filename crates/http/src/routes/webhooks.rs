//! `/webhooks`: webhook management as Basis Theory's SDKs call it, the event types, and the
//! public signing keys (docs/webhooks.md).

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::AuditAction,
    timestamp,
    webhook::{WebhookEventType, WebhookInput},
    Permission, WebhookId,
};

use super::{parse_id, recorded};
use crate::paths::{
    WEBHOOK, WEBHOOKS, WEBHOOK_EVENT_TYPES, WEBHOOK_SIGNING_KEY, WEBHOOK_SIGNING_KEYS,
};
use crate::{
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::PageView,
    webhook_view::{SigningKeyView, WebhookView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create,
    list,
    get,
    update,
    delete,
    event_types,
    signing_key,
    signing_keys
))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(WEBHOOK_SIGNING_KEY).route(web::get().to(signing_key)))
        .service(web::resource(WEBHOOK_SIGNING_KEYS).route(web::get().to(signing_keys)))
        .service(
            web::resource(WEBHOOK_EVENT_TYPES)
                .wrap(from_fn(auth::require_api_key))
                .route(web::get().to(event_types)),
        )
        .service(
            web::resource(WEBHOOKS)
                .wrap(from_fn(crate::idempotency::idempotent))
                .wrap(from_fn(auth::require_api_key))
                .route(web::post().to(create))
                .route(web::get().to(list)),
        )
        .service(
            web::resource(WEBHOOK)
                .wrap(from_fn(auth::require_api_key))
                .route(web::get().to(get))
                .route(web::put().to(update))
                .route(web::delete().to(delete)),
        );
}

/// Registers a webhook (`webhook:create`; every event type also needs `audit:read`, and
/// application or proxy events `application:read` or `proxy:read`). At most 5 per tenant.
#[utoipa::path(post, path = WEBHOOKS, tag = "webhooks",
    request_body = WebhookInput,
    responses((status = 201, description = "Created.", body = WebhookView)))]
async fn create(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<WebhookInput>,
) -> Result<HttpResponse, ApiError> {
    let hook = state.vault.create_webhook(&caller, input).await?;
    let id = *hook.webhook.id.as_uuid();
    recorded::created(WebhookView::new(hook), AuditAction::WebhookCreated, [id])
}

/// Lists the tenant's webhooks, oldest first (`webhook:read`).
#[utoipa::path(get, path = WEBHOOKS, tag = "webhooks", params(crate::query::PageParams),
    responses((status = 200, description = "A page of webhooks.", body = PageView<WebhookView>)))]
async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = query::webhook_list(req.query_string())?;
    let hooks = state.vault.list_webhooks(&caller, page).await?;
    Ok(HttpResponse::Ok().json(PageView::new(hooks, WebhookView::new)))
}

/// Reads a webhook (`webhook:read`).
#[utoipa::path(get, path = WEBHOOK, tag = "webhooks", params(("id" = uuid::Uuid, Path, description = "The webhook id.")),
    responses((status = 200, description = "The webhook.", body = WebhookView)))]
async fn get(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: WebhookId = parse_id(&id, "webhook")?;
    let hook = state.vault.get_webhook(&caller, id).await?;
    Ok(HttpResponse::Ok().json(WebhookView::new(hook)))
}

/// Replaces a webhook's settings (`webhook:update`); `status` left out keeps it, and
/// `enabled` on a disabled webhook resumes delivery where it stopped.
#[utoipa::path(put, path = WEBHOOK, tag = "webhooks", params(("id" = uuid::Uuid, Path, description = "The webhook id.")),
    request_body = WebhookInput,
    responses((status = 200, description = "The updated webhook.", body = WebhookView)))]
async fn update(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
    JsonBody(input): JsonBody<WebhookInput>,
) -> Result<HttpResponse, ApiError> {
    let id: WebhookId = parse_id(&id, "webhook")?;
    let hook = state.vault.replace_webhook(&caller, id, input).await?;
    recorded::ok(
        WebhookView::new(hook),
        AuditAction::WebhookUpdated,
        [*id.as_uuid()],
    )
}

/// Deletes a webhook (`webhook:delete`).
#[utoipa::path(delete, path = WEBHOOK, tag = "webhooks", params(("id" = uuid::Uuid, Path, description = "The webhook id.")),
    responses((status = 204, description = "Deleted.")))]
async fn delete(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: WebhookId = parse_id(&id, "webhook")?;
    state.vault.delete_webhook(&caller, id).await?;
    recorded::no_content(AuditAction::WebhookDeleted, [*id.as_uuid()])
}

/// The event types a webhook can subscribe to (`webhook:read`): a bare JSON array.
#[utoipa::path(get, path = WEBHOOK_EVENT_TYPES, tag = "webhooks",
    responses((status = 200, description = "The event types.", body = Vec<String>)))]
async fn event_types(Caller(caller): Caller, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    query::none(req.query_string())?;
    caller.require(Permission::WebhookRead)?;
    let names: Vec<&str> = WebhookEventType::ALL.iter().map(|t| t.as_str()).collect();
    Ok(HttpResponse::Ok().json(names))
}

/// The public half of the key that signs webhooks now, as PEM. No key is needed: it is
/// public, like Basis Theory's published key.
#[utoipa::path(get, path = WEBHOOK_SIGNING_KEY, tag = "webhooks", security(()),
    responses((status = 200, description = "PEM (SubjectPublicKeyInfo).", body = String,
        content_type = "application/x-pem-file"),
        (status = 400, description = "A query parameter was given (it takes none).", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database or the key custody is unavailable; retry later.", body = crate::problem::Problem, content_type = "application/problem+json")))]
async fn signing_key(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    query::none(req.query_string())?;
    let (stored, _) = state.vault.webhook_signing_key_at(timestamp::now()).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/x-pem-file")
        .insert_header(("cache-control", "public, max-age=300"))
        .body(stored.public_pem))
}

/// Every published signing key: the one signing now, one published ahead of a rotation, and
/// the ones before (docs/webhooks.md, "Rotating the signing key"). No key is needed.
#[utoipa::path(get, path = WEBHOOK_SIGNING_KEYS, tag = "webhooks", security(()),
    responses((status = 200, description = "The keys, oldest first.", body = Vec<SigningKeyView>),
        (status = 400, description = "A query parameter was given (it takes none).", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database or the key custody is unavailable; retry later.", body = crate::problem::Problem, content_type = "application/problem+json")))]
async fn signing_keys(
    state: web::Data<ApiState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    query::none(req.query_string())?;
    let keys = state.vault.webhook_signing_keys().await?;
    let views: Vec<SigningKeyView> = keys.into_iter().map(SigningKeyView::from).collect();
    Ok(HttpResponse::Ok()
        .insert_header(("cache-control", "public, max-age=300"))
        .json(views))
}
