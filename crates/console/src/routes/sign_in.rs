//! `GET /console` (the sign-in form), `POST /console/sign-in`, `POST /console/sign-out`.
//!
//! Signing in: the form's CSRF token must equal the one in the short-lived sign-in cookie
//! (double submit: another site can neither read the cookie nor set the field), the key is
//! checked by [`tessera_domain::Vault::open_console_session`] — the API's own check — and a
//! *new* session is opened (a session id the browser already had is never reused: no
//! fixation). Signing out removes the session on the server (every replica) and the cookie in
//! the browser.

use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
use tessera_domain::{
    error::ErrorClass,
    vault::{random_token, session_id_hash, tokens_match},
    ValidationErrors,
};

use crate::{
    context::{Ctx, Posted},
    error::ConsoleError,
    form::Form,
    mount::{SESSION_COOKIE, SIGN_IN_COOKIE},
    session::{self, Presented},
    state::State,
    views::{
        self,
        components::Problems,
        see_other,
        sign_in::{self, Notice},
    },
};

/// Longest sign-in form accepted (a key is 36 characters).
const SIGN_IN_BODY_LIMIT: usize = 4096;

/// The sign-in form's token: the one the browser already holds (several tabs), or a new one.
fn sign_in_token(req: &HttpRequest) -> String {
    req.cookie(&session::cookie_name(req, SIGN_IN_COOKIE))
        .map(|c| c.value().to_string())
        .filter(|v| {
            v.len() == 43
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .unwrap_or_else(random_token)
}

fn form_page(
    req: &HttpRequest,
    status: StatusCode,
    notice: Notice,
    problems: &Problems,
) -> HttpResponse {
    let token = sign_in_token(req);
    let mut res = views::html(status, sign_in::page(&token, notice, problems));
    // Adding a cookie to a response built here cannot fail.
    let _ = res.add_cookie(&session::cookie(req, SIGN_IN_COOKIE, token));
    res
}

/// `GET /console`: the form, or the tokens page for a signed-in browser.
pub(crate) async fn page(req: HttpRequest, signed_in: Result<Ctx, ConsoleError>) -> HttpResponse {
    let removals = match signed_in {
        Ok(_) => return see_other("/console/tokens"),
        Err(ConsoleError::SeveralSessions(removals)) => removals,
        Err(_) => Vec::new(),
    };
    let query = Form::parse(req.query_string().as_bytes());
    let notice = if query.checked("expired") {
        Notice::Expired
    } else if query.checked("signed_out") {
        Notice::SignedOut
    } else {
        Notice::None
    };
    let mut res = form_page(&req, StatusCode::OK, notice, &Problems::none());
    for removal in &removals {
        let _ = res.add_cookie(removal);
    }
    res
}

/// `POST /console/sign-in`.
pub(crate) async fn sign_in(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<State>,
) -> Result<HttpResponse, ConsoleError> {
    let form = Form::read(&req, payload.into_inner(), SIGN_IN_BODY_LIMIT).await?;
    let expected = req
        .cookie(&session::cookie_name(&req, SIGN_IN_COOKIE))
        .map(|c| c.value().to_string());
    if !expected.is_some_and(|e| tokens_match(form.get("csrf"), &e)) {
        tracing::warn!("console sign-in refused: CSRF token missing or wrong");
        return Err(ConsoleError::Csrf);
    }
    let key = form.get("api_key").trim();
    if key.is_empty() {
        let problems = Problems::from_fields(&ValidationErrors::single("api_key", "is required"));
        return Ok(form_page(
            &req,
            StatusCode::BAD_REQUEST,
            Notice::None,
            &problems,
        ));
    }
    let client = state.sign_ins.client(&req);
    if let Err(wait) = state.sign_ins.allowed(client) {
        tracing::warn!(client = ?client, "console sign-in throttled after repeated failures");
        return Ok(throttled(wait));
    }
    let (id, principal) = match state.vault.open_console_session(key).await {
        Ok(opened) => opened,
        Err(e) if e.class() == ErrorClass::Unauthenticated => {
            state.sign_ins.failed(client);
            tracing::warn!(reason = %e, "console sign-in refused");
            let problems =
                Problems::from_fields(&ValidationErrors::single("api_key", e.public_message()));
            return Ok(form_page(
                &req,
                StatusCode::UNAUTHORIZED,
                Notice::None,
                &problems,
            ));
        }
        Err(e) => return Err(ConsoleError::Unavailable(e.public_message())),
    };
    // A session id the browser already had is never reused (no fixation): it ends.
    let old = match session::presented(&req) {
        Presented::None => Vec::new(),
        Presented::One(id) => vec![id],
        Presented::Several(ids) => ids,
    };
    for old in old {
        if let Err(e) = state
            .vault
            .end_console_session(&session_id_hash(&old))
            .await
        {
            return Err(ConsoleError::Unavailable(e.public_message()));
        }
    }
    tracing::info!(
        tenant = %principal.tenant_id(),
        application = %principal.application_id(),
        "console session opened"
    );
    let mut res = see_other("/console/tokens");
    let _ = res.add_cookie(&session::cookie(&req, SESSION_COOKIE, id.expose().clone()));
    let _ = res.add_cookie(&session::removal(&req, SIGN_IN_COOKIE));
    Ok(res)
}

/// `429` with `Retry-After`: too many failed sign-ins from this client.
fn throttled(wait: std::time::Duration) -> HttpResponse {
    let mut res = views::errors::message_page(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many attempts",
        "Too many sign-ins with a wrong key came from your address. Wait a little and try again.",
    );
    let secs = tessera_service::rate_limit::retry_after_secs(wait);
    res.headers_mut().insert(
        actix_web::http::header::RETRY_AFTER,
        actix_web::http::header::HeaderValue::from(secs),
    );
    res
}

/// `POST /console/sign-out`: the session ends on the server.
pub(crate) async fn sign_out(posted: Posted) -> Result<HttpResponse, ConsoleError> {
    let ctx = posted.ctx;
    ctx.state
        .vault
        .end_console_session(&ctx.session.id_hash)
        .await
        .map_err(|e| ConsoleError::Unavailable(e.public_message()))?;
    tracing::info!(application = %ctx.principal.application_id(), "console session closed");
    let mut res = see_other("/console?signed_out=1");
    let _ = res.add_cookie(&session::removal(&ctx.req, SESSION_COOKIE));
    Ok(res)
}
