//! The `Caller` extractor: authenticates `SVC-API-KEY` into a [`Principal`].

use std::{future::Future, pin::Pin};

use actix_web::{dev::Payload, http::StatusCode, web, FromRequest, HttpRequest};
use tessera_domain::Principal;

use crate::{problem::ApiError, state::ApiState};

/// Header carrying the API key (matched case-insensitively, as all header names are).
pub const API_KEY_HEADER: &str = "svc-api-key";

/// The authenticated caller of a management endpoint.
pub struct Caller(pub Principal);

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<ApiState>>().cloned();
        // A header that is not visible ASCII cannot be a key: treat it like a malformed one.
        let presented = req
            .headers()
            .get(API_KEY_HEADER)
            .map(|v| v.to_str().unwrap_or("\u{0}").to_string());
        Box::pin(async move {
            let state = state.ok_or_else(|| {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "API state missing")
            })?;
            state
                .vault
                .authenticate(presented.as_deref())
                .await
                .map(Caller)
                .map_err(ApiError::from)
        })
    }
}
