//! Route table.

mod applications;
mod audit;
mod children;
mod detokenize;
mod health;
mod proxies;
mod recorded;
mod tokenize;
mod tokens;
mod webhooks;

use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse, ResponseError};
use tessera_service::header_names::HeaderNames;

use crate::problem::ApiError;

/// Registers every management route; `names` are the prefixed headers (the browser endpoints
/// accept them in CORS preflights).
pub(crate) fn configure(cfg: &mut web::ServiceConfig, names: &HeaderNames) {
    health::configure(cfg);
    applications::configure(cfg);
    tokens::configure(cfg, names);
    tokenize::configure(cfg, names);
    detokenize::configure(cfg);
    children::configure(cfg);
    proxies::configure(cfg);
    audit::configure(cfg);
    webhooks::configure(cfg);
}

/// Any unknown route.
pub(crate) async fn not_found(req: HttpRequest) -> HttpResponse {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no route for {} {}", req.method(), req.path()),
    )
    .error_response()
}

/// Parses a path id, answering 400 on the `id` field when it is not a UUID.
pub(crate) fn parse_id<T: std::str::FromStr>(raw: &str, what: &str) -> Result<T, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::field("id", format!("`{raw}` is not a valid {what} id")))
}

/// The operations of every management route, merged (see [`crate::openapi`]).
pub(crate) fn openapi() -> utoipa::openapi::OpenApi {
    use utoipa::OpenApi;
    let mut doc = health::Doc::openapi();
    for part in [
        applications::Doc::openapi(),
        tokens::Doc::openapi(),
        tokenize::Doc::openapi(),
        detokenize::Doc::openapi(),
        children::Doc::openapi(),
        proxies::Doc::openapi(),
        audit::Doc::openapi(),
        webhooks::Doc::openapi(),
    ] {
        doc.merge(part);
    }
    doc
}
