//! `POST /tokenize`: several tokens in one call, all or none, in the forms Basis Theory's
//! `tokenize` takes (docs/api.md): token requests and bare values, in arrays and objects, the
//! answer in the body's shape ([`shape`]).

mod shape;

use actix_web::{middleware::from_fn, web, HttpRequest};
use tessera_domain::{audit::AuditAction, TokenId};
use tessera_service::header_names::HeaderNames;

use self::shape::Shape;
use super::{
    recorded::{self, Answer},
    tokens::{ids, mark_imported, mask_note},
};
use crate::paths::TOKENIZE;
use crate::{
    audit::note,
    auth::{self, Caller},
    body::JsonBytes,
    browser,
    idempotency::idempotent,
    state::ApiState,
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(tokenize))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig, names: &HeaderNames) {
    cfg.service(
        web::resource(TOKENIZE)
            .wrap(from_fn(idempotent))
            .wrap(from_fn(auth::require_api_key))
            .wrap(browser::cors(names))
            .wrap(from_fn(browser::share_only_if_admitted))
            .route(web::post().to(tokenize)),
    );
}

/// Creates 1–100 tokens at once, all or none. An object whose `type` is a string is a token
/// request, answered by its token (`data` only under a `mask` transform); a bare value (a
/// string, a number or a boolean) becomes a `token` holding it, answered by its id; arrays are
/// walked element by element and other objects member by member, at most 8 levels deep, and
/// the answer has the body's shape. Needs `token:create` on every target container; one
/// invalid request is a 400 naming it (`[3].data.number`, `card.data.number`,
/// `tags[1].data`), and nothing is stored.
#[utoipa::path(post, path = TOKENIZE, tag = "tokens",
    request_body(content = serde_json::Value, description = "Token create requests and bare values (1 to 100 in all), alone or in arrays and objects nested at most 8 levels deep."),
    responses((status = 201, description = "The tokens, in the shape of the request.", body = serde_json::Value)))]
async fn tokenize(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
    JsonBytes(body): JsonBytes,
) -> Answer {
    let (labelled, shape) = Shape::read(&body)?;
    browser::spend_for_tokens(&state.browsers, &req, labelled.len())?;
    let chosen: Vec<TokenId> = labelled
        .iter()
        .filter_map(|(_, input)| input.chosen_id())
        .collect();
    let tokens = state
        .vault
        .create_labelled_tokens(&caller, labelled)
        .await?;
    let created = ids(&tokens);
    let noted = mask_note(&tokens);
    let imported = created
        .iter()
        .filter(|id| chosen.contains(id))
        .cloned()
        .collect();
    let answer = shape.answer(tokens, &caller);
    let response = recorded::created(answer, AuditAction::TokenCreated, created)?;
    let response = note(response, AuditAction::TokenCreated, noted);
    Ok(mark_imported(response, imported))
}
