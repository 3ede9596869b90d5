//! `POST /detokenize`: a JSON value with detokenization expressions, answered with the
//! expressions replaced by the token data, as Basis Theory's SDKs call it. The substitution is
//! the proxy's JSON body substitution (see `docs/api.md`); the caller learns the
//! values, so it needs `token:read` (not `token:use`) on each token's container.

use actix_web::{
    http::{header::ContentType, StatusCode},
    middleware::from_fn,
    web, HttpResponse,
};
use tessera_detokenize::{DetokenizeError, RequestTemplate, Values, DEFAULT_MAX_TOKENS};
use tessera_domain::{audit::AuditAction, Principal, TokenId};

use super::recorded::Answer;
use crate::paths::DETOKENIZE;
use crate::{
    audit::mark,
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    state::ApiState,
};

/// Largest rendered answer, in bytes: the gateway's default `--max-rendered-bytes`.
pub(crate) const MAX_RENDERED_BYTES: u64 = 10 * 1024 * 1024;

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(detokenize))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(DETOKENIZE)
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(detokenize)),
    );
}

/// Answers the JSON body with every `{{ token_id | filters }}` expression replaced by the
/// token's data as the caller's transform shows it (or, with `{{ token: id }}`, the token
/// object as a read answers it), injection-safely as the proxy substitutes JSON bodies.
/// Needs `token:read` on each token's container; destination-bound
/// tokens are refused. Unknown tokens and other tenants' are the same 400; at most 100
/// distinct tokens; a rendering that could exceed 10 MiB is a 413, decided before decrypting.
#[utoipa::path(post, path = DETOKENIZE, tag = "tokens",
    request_body(content = serde_json::Value, description = "Any JSON value holding detokenization expressions."),
    responses((status = 200, description = "The body with every expression replaced.", body = serde_json::Value)))]
async fn detokenize(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<serde_json::Value>,
) -> Answer {
    let body = serde_json::to_vec(&input)
        .map_err(|e| ApiError::field("body", format!("malformed JSON: {e}")))?;
    let template =
        RequestTemplate::prepare(Some("application/json"), [], &body).map_err(refused)?;
    template
        .check_token_count(DEFAULT_MAX_TOKENS)
        .map_err(refused)?;
    let values = resolve(&state, &caller, &template, body.len()).await?;
    let rendered = template.render(&values).map_err(refused)?;
    let ids: Vec<TokenId> = template.token_ids().iter().cloned().collect();
    let response = HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(rendered.body.unwrap_or(body));
    Ok(if ids.is_empty() {
        response
    } else {
        mark(response, AuditAction::TokenRead, ids)
    })
}

/// Fetches the referenced tokens (`token:read` on each, destination-bound ones refused),
/// refuses unknown ones and a rendering that could exceed [`MAX_RENDERED_BYTES`], both before
/// anything is decrypted, then decrypts each token once into what rendering needs.
async fn resolve(
    state: &ApiState,
    caller: &Principal,
    template: &RequestTemplate,
    body_len: usize,
) -> Result<Values, ApiError> {
    let sealed = state
        .vault
        .tokens_for_read(caller, template.token_ids())
        .await?;
    template
        .check_found(body_len, sealed.sizes(), MAX_RENDERED_BYTES)
        .map_err(refused)?;
    Ok(template.values_for(sealed.open()?, caller))
}

/// The answer to a refused expression: 413 for a rendering too large, else 400, with the
/// proxy's messages (none depends on a token's value).
fn refused(e: DetokenizeError) -> ApiError {
    let status = match e {
        DetokenizeError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, e.to_string())
}
