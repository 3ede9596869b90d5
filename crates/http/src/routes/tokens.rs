//! `/tokens`: create, read, list, delete (SUPPLEMENT §3).

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{NewToken, TokenId};

use super::parse_id;
use crate::{
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::{PageView, TokenView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(create, list, get, delete))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/tokens")
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(create))
            .route(web::get().to(list)),
    )
    .service(
        web::resource("/tokens/{id}")
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get))
            .route(web::delete().to(delete)),
    );
}

/// Stores a secret and returns its token (without the data). Needs `token:create` on the
/// target container.
#[utoipa::path(post, path = "/tokens", tag = "tokens",
    request_body = NewToken,
    responses((status = 201, description = "Created.", body = TokenView)))]
async fn create(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<NewToken>,
) -> Result<HttpResponse, ApiError> {
    let token = state.vault.create_token(&caller, input).await?;
    Ok(HttpResponse::Created().json(TokenView::without_data(token)))
}

/// Lists tokens the caller may read (with data), oldest first. Tokens in containers without
/// `token:read` are neither listed nor counted.
#[utoipa::path(get, path = "/tokens", tag = "tokens",
    params(crate::query::TokenListParams, crate::query::PageParams),
    responses((status = 200, description = "A page of tokens.", body = PageView<TokenView>)))]
async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = query::token_list(req.query_string())?;
    let tokens = state.vault.list_tokens(&caller, &q.filter, q.page).await?;
    Ok(HttpResponse::Ok().json(PageView::new(tokens, TokenView::with_data)))
}

/// Reads a token with its data. Needs `token:read` on its container.
#[utoipa::path(get, path = "/tokens/{id}", tag = "tokens", params(("id" = uuid::Uuid, Path, description = "The token id.")),
    responses((status = 200, description = "The token.", body = TokenView)))]
async fn get(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: TokenId = parse_id(&id, "token")?;
    let token = state.vault.get_token(&caller, id).await?;
    Ok(HttpResponse::Ok().json(TokenView::with_data(token)))
}

/// Deletes a token and its associations (its children remain). Needs `token:delete`.
#[utoipa::path(delete, path = "/tokens/{id}", tag = "tokens", params(("id" = uuid::Uuid, Path, description = "The token id.")),
    responses((status = 204, description = "Deleted.")))]
async fn delete(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: TokenId = parse_id(&id, "token")?;
    state.vault.delete_token(&caller, id).await?;
    Ok(HttpResponse::NoContent().finish())
}
