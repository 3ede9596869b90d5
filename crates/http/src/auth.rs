//! Authentication of management calls by `SVC-API-KEY`.
//!
//! It runs as middleware on every protected resource, *before* the handler's extractors: actix
//! polls a handler's extractors together and answers with whichever fails first, so if the
//! key were checked by an extractor, an unknown key sent with a bad body could get a 400/413/415
//! instead of its 401. The handler then reads the authenticated [`Caller`] from the request.

use std::future::{ready, Ready};

use actix_web::{
    body::{BoxBody, MessageBody},
    dev::{Payload, ServiceRequest, ServiceResponse},
    http::StatusCode,
    middleware::Next,
    web, Error, FromRequest, HttpMessage, HttpRequest,
};
use tessera_domain::Principal;

use crate::{problem::ApiError, state::ApiState};

/// Header carrying the API key (matched case-insensitively, as all header names are).
pub(crate) const API_KEY_HEADER: &str = "svc-api-key";

/// The authenticated caller of a management endpoint.
pub(crate) struct Caller(pub Principal);

/// Middleware: authenticates the request or answers 401 without running the handler.
pub(crate) async fn require_api_key(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let Some(state) = req.app_data::<web::Data<ApiState>>().cloned() else {
        return Ok(req.error_response(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "API state missing",
        )));
    };
    // A header that is not visible ASCII cannot be a key: treat it like a malformed one.
    let presented = req
        .headers()
        .get(API_KEY_HEADER)
        .map(|v| v.to_str().unwrap_or("\u{0}").to_string());
    match state.vault.authenticate(presented.as_deref()).await {
        Ok(principal) => {
            if let Some(limiter) = &state.rate_limiter {
                if let Err(wait) = limiter.check(&principal.application_id()) {
                    return Ok(req.error_response(ApiError::rate_limited(
                        tessera_service::rate_limit::retry_after_secs(wait),
                    )));
                }
            }
            req.extensions_mut().insert(principal);
            Ok(next.call(req).await?.map_into_boxed_body())
        }
        Err(e) => Ok(req.error_response(ApiError::from(e))),
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            req.extensions()
                .get::<Principal>()
                .cloned()
                .map(Caller)
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "route is not behind authentication",
                    )
                }),
        )
    }
}
