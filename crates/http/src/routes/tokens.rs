//! `/tokens`: create, read, list, update, delete and search (docs/api.md "Tokens"); bulk
//! creation in [`super::tokenize`]; cursor pages under `/v2/tokens` in [`v2`].

mod v2;

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::AuditAction, search::TokenSearchRequest, NewToken, Permission, Token, TokenId,
    TokenPatch,
};

use tessera_service::header_names::HeaderNames;

use super::{parse_id, recorded};
use crate::paths::{SEARCH, TOKEN, TOKENS};
use crate::{
    audit::{mark, note},
    auth::{self, Caller},
    body::JsonBody,
    browser,
    idempotency::idempotent,
    problem::ApiError,
    query,
    state::ApiState,
    views::{created_or_found, PageView, TokenView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(create, list, get, update, delete, search, v2::list_v2, v2::search_v2))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig, names: &HeaderNames) {
    v2::configure(cfg);
    // `/tokens/search` before `/tokens/{id}`: actix matches resources in registration order.
    cfg.service(
        web::resource(SEARCH)
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(search)),
    )
    .service(
        web::resource(TOKENS)
            .wrap(from_fn(idempotent))
            .wrap(from_fn(auth::require_api_key))
            .wrap(browser::cors(names))
            .wrap(from_fn(browser::share_only_if_admitted))
            .route(web::post().to(create))
            .route(web::get().to(list)),
    )
    .service(
        web::resource(TOKEN)
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get))
            .route(web::patch().to(update))
            .route(web::delete().to(delete)),
    );
}

/// Stores a secret and returns its token (without the data). Needs `token:create` on the
/// target container. With `deduplicate_token: true`, an existing live token of the same type,
/// container and fingerprint is returned instead, with 200.
#[utoipa::path(post, path = TOKENS, tag = "tokens",
    request_body = NewToken,
    responses(
        (status = 201, description = "Created.", body = TokenView),
        (status = 200, description = "`deduplicate_token` found an equal live token: that token, nothing created.", body = TokenView)))]
async fn create(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<NewToken>,
) -> Result<HttpResponse, ApiError> {
    let chosen = input.chooses_id();
    let (token, created) = state.vault.create_or_find_token(&caller, input).await?;
    let id = token.id.clone();
    let noted = created.then(|| mask_note([&token])).flatten();
    let response = mark(
        created_or_found(token, created, &caller),
        AuditAction::TokenCreated,
        [id.clone()],
    );
    let response = note(response, AuditAction::TokenCreated, noted);
    Ok(mark_imported(
        response,
        (created && chosen).then_some(id).into_iter().collect(),
    ))
}

/// Searches the tokens the caller may read, newest first: exact metadata pairs, types,
/// fingerprint, container prefix and creation time, all of which must match, or a `query`
/// string (`type:card AND metadata.customer:c_42`; docs/api.md "Search query"). `data` is left
/// out unless `include_data` is true. Pages are numbered (`page`); `start` is refused, cursor
/// pages are `POST /v2/tokens/search`.
#[utoipa::path(post, path = SEARCH, tag = "tokens",
    request_body = TokenSearchRequest,
    responses((status = 200, description = "A page of tokens, newest first.", body = PageView<TokenView>)))]
async fn search(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<TokenSearchRequest>,
) -> Result<HttpResponse, ApiError> {
    let valid = input.validate().map_err(|e| ApiError::validation(&e))?;
    let tokens = state
        .vault
        .search_tokens(&caller, &valid.search, valid.page)
        .await?;
    if valid.include_data {
        let read = ids(&tokens.items);
        Ok(read_data(
            HttpResponse::Ok().json(PageView::new(tokens, |t| {
                TokenView::read(t, &caller, Permission::TokenSearch)
            })),
            read,
        ))
    } else {
        Ok(HttpResponse::Ok().json(PageView::new(tokens, |t| {
            TokenView::without_data(t, &caller)
        })))
    }
}

/// Updates a token with a JSON merge patch (RFC 7396; `application/merge-patch+json` or
/// `application/json`): `data` replaced, `metadata` merged (a key set to `null` is removed),
/// `expires_at` set or cleared with `null`. `type`, `containers` and `id` cannot change. Needs
/// `token:update` on its container.
#[utoipa::path(patch, path = TOKEN, tag = "tokens", params(("id" = String, Path, description = "The token id: a UUID, or the id its creator chose (URL-encoded).")),
    request_body(content = TokenPatch, content_type = "application/merge-patch+json"),
    responses((status = 200, description = "The updated token: `data` only under a `mask` transform, as its mask.", body = TokenView)))]
async fn update(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
    JsonBody(patch): JsonBody<TokenPatch>,
) -> Result<HttpResponse, ApiError> {
    let id: TokenId = parse_id(&id, "token")?;
    let sets_mask = matches!(patch.mask, Some(Some(_)));
    let token = state.vault.update_token(&caller, id.clone(), patch).await?;
    let noted = sets_mask.then(|| mask_note([&token])).flatten();
    let view = TokenView::written(token, &caller, Permission::TokenUpdate);
    let response = recorded::ok(view, AuditAction::TokenUpdated, [id])?;
    Ok(note(response, AuditAction::TokenUpdated, noted))
}

/// Lists tokens the caller may read (with data), oldest first. Tokens in containers without
/// `token:read` are neither listed nor counted.
#[utoipa::path(get, path = TOKENS, tag = "tokens",
    params(crate::query::TokenListParams, crate::query::PageParams),
    responses((status = 200, description = "A page of tokens.", body = PageView<TokenView>)))]
async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = query::token_list(req.query_string())?;
    let tokens = state.vault.list_tokens(&caller, &q.filter, q.page).await?;
    let read = ids(&tokens.items);
    Ok(read_data(
        HttpResponse::Ok().json(PageView::new(tokens, |t| {
            TokenView::read(t, &caller, Permission::TokenRead)
        })),
        read,
    ))
}

/// Reads a token with its data. Needs `token:read` on its container.
#[utoipa::path(get, path = TOKEN, tag = "tokens", params(("id" = String, Path, description = "The token id: a UUID, or the id its creator chose (URL-encoded).")),
    responses((status = 200, description = "The token.", body = TokenView)))]
async fn get(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: TokenId = parse_id(&id, "token")?;
    let token = state.vault.get_token(&caller, id.clone()).await?;
    let view = TokenView::read(token, &caller, Permission::TokenRead);
    recorded::ok(view, AuditAction::TokenRead, [id])
}

/// Deletes a token and its associations (its children remain). Needs `token:delete`.
#[utoipa::path(delete, path = TOKEN, tag = "tokens", params(("id" = String, Path, description = "The token id: a UUID, or the id its creator chose (URL-encoded).")),
    responses((status = 204, description = "Deleted.")))]
async fn delete(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: TokenId = parse_id(&id, "token")?;
    state.vault.delete_token(&caller, id.clone()).await?;
    recorded::no_content(AuditAction::TokenDeleted, [id])
}

/// Also records `token.imported` on `imported`: the created tokens whose ids their caller
/// chose (nothing when there are none).
pub(super) fn mark_imported(response: HttpResponse, imported: Vec<TokenId>) -> HttpResponse {
    if imported.is_empty() {
        response
    } else {
        mark(response, AuditAction::TokenImported, imported)
    }
}

/// The note of a write that set the own masks of `tokens`: the places of data each mask
/// shows whole (`mask shows whole: data.number`, with the token's id when there are several),
/// recorded in the write's audit event (docs/api.md, "Masks"); `None` when no mask does.
pub(super) fn mask_note<'a>(tokens: impl IntoIterator<Item = &'a Token>) -> Option<String> {
    let shown: Vec<(String, Vec<String>)> = tokens
        .into_iter()
        .filter_map(|t| {
            let mask = t.mask.as_ref()?;
            let whole = tessera_domain::token::whole_fields(mask, t.data.expose());
            (!whole.is_empty()).then(|| (t.id.to_string(), whole))
        })
        .collect();
    match shown.as_slice() {
        [] => None,
        [(_, whole)] => Some(format!("mask shows whole: {}", whole.join(", "))),
        several => Some(format!(
            "masks show whole: {}",
            several
                .iter()
                .map(|(id, whole)| format!("{id}: {}", whole.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// The ids of `tokens`, in order.
pub(super) fn ids(tokens: &[Token]) -> Vec<TokenId> {
    tokens.iter().map(|t| t.id.clone()).collect()
}

/// Marks a response that returned the data of `read` as a `token.read` (nothing when the
/// page was empty: no data was returned).
pub(super) fn read_data(response: HttpResponse, read: Vec<TokenId>) -> HttpResponse {
    if read.is_empty() {
        response
    } else {
        mark(response, AuditAction::TokenRead, read)
    }
}
