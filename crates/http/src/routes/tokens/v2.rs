//! `GET /v2/tokens` and `POST /v2/tokens/search`: cursor pages of tokens, newest first, as
//! Basis Theory's SDKs walk them (docs/api.md "Cursor pages").

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{
    search::{TokenSearchV2Request, ValidWalk},
    Permission, Principal,
};

use super::{ids, read_data};
use crate::paths::{SEARCH_V2, TOKENS_V2};
use crate::{
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::{CursorPageView, TokenView},
};

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(SEARCH_V2)
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(search_v2)),
    )
    .service(
        web::resource(TOKENS_V2)
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(list_v2)),
    );
}

/// Lists the tokens the caller may read (with data), newest first, one cursor page at a time:
/// pass `pagination.next` as `start` for the next page; it is `null` on the last one. A
/// cursor works only for the key, tenant and filters it was issued to. Tokens in containers
/// without `token:read` are never listed.
#[utoipa::path(get, path = TOKENS_V2, tag = "tokens",
    params(crate::query::TokenListV2Params),
    responses((status = 200, description = "A cursor page of tokens, newest first.", body = CursorPageView<TokenView>)))]
pub(super) async fn list_v2(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let walk = query::token_list_v2(req.query_string())?;
    answer(&state, &caller, walk, Permission::TokenRead).await
}

/// Searches the tokens the caller may read (with data) with a `query` string, newest first,
/// one cursor page at a time, as `GET /v2/tokens` pages.
#[utoipa::path(post, path = SEARCH_V2, tag = "tokens",
    request_body = TokenSearchV2Request,
    responses((status = 200, description = "A cursor page of tokens, newest first.", body = CursorPageView<TokenView>)))]
pub(super) async fn search_v2(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<TokenSearchV2Request>,
) -> Result<HttpResponse, ApiError> {
    let walk = input.validate().map_err(|e| ApiError::validation(&e))?;
    answer(&state, &caller, walk, Permission::TokenSearch).await
}

/// One page of `walk` made with `permission` (`token:read` to list, `token:search` to
/// search), with data as the caller's transform shows it, recorded as a `token.read` of the
/// tokens returned.
async fn answer(
    state: &ApiState,
    caller: &Principal,
    walk: ValidWalk,
    permission: Permission,
) -> Result<HttpResponse, ApiError> {
    let page = state
        .vault
        .walk_tokens(caller, &walk.search, &walk.page, permission)
        .await?;
    let read = ids(&page.items);
    Ok(read_data(
        HttpResponse::Ok().json(CursorPageView::new(page, |t| {
            TokenView::read(t, caller, permission)
        })),
        read,
    ))
}
