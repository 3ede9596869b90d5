//! Authentication of management calls by `SVC-API-KEY`.
//!
//! It runs as middleware on every protected resource, *before* the handler's extractors: actix
//! polls a handler's extractors together and answers with whichever fails first, so if the
//! key were checked by an extractor, an unknown key sent with a bad body could get a 400/413/415
//! instead of its 401. The handler then reads the authenticated [`Caller`] from the request.

use std::future::{ready, Ready};

use actix_web::ResponseError;
use actix_web::{
    body::{BoxBody, MessageBody},
    dev::{Payload, ServiceRequest, ServiceResponse},
    http::StatusCode,
    middleware::Next,
    web, Error, FromRequest, HttpMessage, HttpRequest,
};
use tessera_domain::{audit::AuditEvent, Principal};

use crate::{
    audit::{self, Audited, CallContext, DenialReason},
    browser,
    problem::ApiError,
    request_id::RequestId,
    state::ApiState,
};

/// The authenticated caller of a management endpoint.
pub(crate) struct Caller(pub Principal);

/// Middleware: authenticates the request or answers 401 without running the handler; then
/// records the call's audit events (see [`crate::audit`]).
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
        .get(state.config.names.api_key.as_str())
        .map(|v| v.to_str().unwrap_or("\u{0}").to_string());
    let principal = match state.vault.authenticate(presented.as_deref()).await {
        Ok(principal) => principal,
        Err(e) => {
            let res = req.error_response(ApiError::from(e));
            return Ok(audited(&state, None, res).await);
        }
    };
    if let Err(refused) = browser::admit(&state.browsers, &req, &principal) {
        let res = req.error_response(refused);
        return Ok(audited(&state, Some(&principal), res).await);
    }
    if let Some(limiter) = &state.rate_limiter {
        if let Err(wait) = limiter.check(&principal.application_id()) {
            return Ok(req.error_response(ApiError::rate_limited(
                tessera_service::rate_limit::retry_after_secs(wait),
            )));
        }
    }
    req.extensions_mut().insert(principal.clone());
    let res = next.call(req).await?.map_into_boxed_body();
    Ok(audited(&state, Some(&principal), res).await)
}

/// The audit events of an answered call: what the handler marked on a success, or the
/// refusal (401/403, whose problem carries its reason) of an audited route, aimed at the ids
/// its path names. Everything is read from the answer, so nothing is computed for calls that
/// record nothing.
fn call_events(principal: Option<&Principal>, res: &ServiceResponse<BoxBody>) -> Vec<AuditEvent> {
    let req = res.request();
    let request_id = req.extensions().get::<RequestId>().map(|r| r.0.clone());
    let origin = req
        .headers()
        .get(actix_web::http::header::ORIGIN)
        .and_then(|o| o.to_str().ok());
    let call = CallContext {
        principal,
        request_id: request_id.as_deref(),
        origin,
    };
    let extensions = res.response().extensions();
    if res.status().is_success() {
        return extensions
            .get::<Audited>()
            .map(|audited| call.successes(audited))
            .unwrap_or_default();
    }
    let attempted = req
        .match_pattern()
        .and_then(|pattern| audit::attempted(req.method(), &pattern));
    match (extensions.get::<DenialReason>(), attempted) {
        (Some(reason), Some(action)) => vec![call.denial(action, path_ids(req), &reason.0)],
        _ => Vec::new(),
    }
}

/// The ids among the path's parameters (what a refused call was aiming at).
fn path_ids(req: &HttpRequest) -> Vec<tessera_domain::audit::ResourceId> {
    req.match_info()
        .iter()
        .filter_map(|(_, value)| value.parse().ok())
        .collect()
}

/// Records the call's events (see [`call_events`]); when they cannot be committed (sync
/// mode), the caller gets a 503 instead of `res`: an answer the trail does not hold would break
/// the sync guarantee.
async fn audited(
    state: &ApiState,
    principal: Option<&Principal>,
    res: ServiceResponse<BoxBody>,
) -> ServiceResponse<BoxBody> {
    if !state.vault.audit().is_on() {
        return res;
    }
    let events = call_events(principal, &res);
    match state.vault.audit().record(events).await {
        Ok(()) => res,
        Err(e) => {
            tracing::error!(error = %e, "audit events not committed; answering 503");
            let (req, _) = res.into_parts();
            let error = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the audit trail cannot be written; the operation may have been applied, and its events will be written once the database recovers",
            );
            ServiceResponse::new(req, error.error_response())
        }
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
