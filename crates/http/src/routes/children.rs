//! `/tokens/{parent_id}/children…`: associations and child tokens
//! (docs/api.md, "Associations").

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{audit::AuditAction, NewToken, Permission, TokenId};

use super::{
    recorded,
    tokens::{ids, read_data},
};
use crate::paths::{CHILD, CHILDREN};
use crate::{
    audit::{mark, note},
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::{child_created_or_found, PageView, TokenView},
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(associate, dissociate, create_child, list_children))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(CHILDREN)
            .wrap(from_fn(crate::idempotency::idempotent))
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(create_child))
            .route(web::get().to(list_children)),
    )
    .service(
        web::resource(CHILD)
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(associate))
            .route(web::delete().to(dissociate)),
    );
}

fn token_id(raw: &str, field: &str) -> Result<TokenId, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::field(field, format!("`{raw}` is not a valid token id")))
}

/// The parent and child ids of a link's path, each checked (a 400 naming the bad one).
fn link(path: &(String, String)) -> Result<(TokenId, TokenId), ApiError> {
    Ok((
        token_id(&path.0, "parent_id")?,
        token_id(&path.1, "child_id")?,
    ))
}

/// Links two existing tokens as parent and child (idempotent). Needs `token:read` on both.
#[utoipa::path(post, path = CHILD, tag = "associations",
    params(("parent_id" = String, Path, description = "The parent token id (URL-encoded)."), ("child_id" = String, Path, description = "The child token id (URL-encoded).")),
    responses((status = 204, description = "Associated (or already was).")))]
async fn associate(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (parent, child) = link(&path)?;
    let ids = [parent.clone(), child.clone()];
    state.vault.associate(&caller, parent, child).await?;
    recorded::no_content(AuditAction::AssociationCreated, ids)
}

/// Removes an association; both tokens remain. Needs `token:delete` on the parent's container.
#[utoipa::path(delete, path = CHILD, tag = "associations",
    params(("parent_id" = String, Path, description = "The parent token id (URL-encoded)."), ("child_id" = String, Path, description = "The child token id (URL-encoded).")),
    responses((status = 204, description = "Removed.")))]
async fn dissociate(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (parent, child) = link(&path)?;
    let ids = [parent.clone(), child.clone()];
    state.vault.dissociate(&caller, parent, child).await?;
    recorded::no_content(AuditAction::AssociationDeleted, ids)
}

/// Creates a token and links it as a child of `parent_id`. Needs `token:read` on the parent
/// and `token:create` on the child's container.
#[utoipa::path(post, path = CHILDREN, tag = "associations",
    params(("parent_id" = String, Path, description = "The parent token id (URL-encoded).")), request_body = NewToken,
    responses(
        (status = 201, description = "The child token (without data).", body = TokenView),
        (status = 200, description = "`deduplicate_token` found an equal live token: it is linked as the child instead, nothing created.", body = TokenView)))]
async fn create_child(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    parent: web::Path<String>,
    JsonBody(input): JsonBody<NewToken>,
) -> Result<HttpResponse, ApiError> {
    let parent = token_id(&parent, "parent_id")?;
    let chosen = input.chooses_id();
    let (token, created) = state
        .vault
        .create_child_token(&caller, parent.clone(), input)
        .await?;
    let child = token.id.clone();
    let noted = created
        .then(|| super::tokens::mask_note([&token]))
        .flatten();
    let response = mark(
        child_created_or_found(token, created, &caller),
        AuditAction::TokenCreated,
        [child.clone()],
    );
    let response = note(response, AuditAction::TokenCreated, noted);
    let response = mark(
        response,
        AuditAction::AssociationCreated,
        [parent, child.clone()],
    );
    Ok(super::tokens::mark_imported(
        response,
        (created && chosen).then_some(child).into_iter().collect(),
    ))
}

/// Lists the children of `parent_id` that the caller may read, with data.
#[utoipa::path(get, path = CHILDREN, tag = "associations",
    params(("parent_id" = String, Path, description = "The parent token id (URL-encoded)."), crate::query::TokenListParams, crate::query::PageParams),
    responses((status = 200, description = "A page of child tokens.", body = PageView<TokenView>)))]
async fn list_children(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    parent: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let parent = token_id(&parent, "parent_id")?;
    let q = query::token_list(req.query_string())?;
    let children = state
        .vault
        .list_children(&caller, parent, &q.filter, q.page)
        .await?;
    let read = ids(&children.items);
    Ok(read_data(
        HttpResponse::Ok().json(PageView::new(children, |t| {
            TokenView::read(t, &caller, Permission::TokenRead)
        })),
        read,
    ))
}
