//! `GET /console` (the sign-in form), `POST /console/sign-in`, `POST /console/sign-out`.
//!
//! Signing in: the form's CSRF token must equal the one in the short-lived sign-in cookie
//! (double submit: another site can neither read the cookie nor set the field), the key is
//! checked by [`tessera_domain::Vault::authenticate`] — the API's own check — and a *new*
//! session is opened (a session id the browser already had is never reused: no fixation).
//! Signing out removes the session on the server and the cookie in the browser.

use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
use tessera_domain::{error::ErrorClass, Secret, ValidationErrors};

use crate::{
    context::{removal_cookie, session_cookie, Ctx, Posted},
    error::ConsoleError,
    form::Form,
    session::{random_token, tokens_match},
    views::{
        self,
        components::Problems,
        see_other,
        sign_in::{self, Notice},
    },
    State, SESSION_COOKIE, SIGN_IN_COOKIE,
};

/// Longest sign-in form accepted (a key is 36 characters).
const SIGN_IN_BODY_LIMIT: usize = 4096;

/// The sign-in form's token: the one the browser already holds (several tabs), or a new one.
fn sign_in_token(req: &HttpRequest) -> String {
    req.cookie(SIGN_IN_COOKIE)
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
    let _ = res.add_cookie(&session_cookie(req, SIGN_IN_COOKIE, token));
    res
}

/// `GET /console`: the form, or the tokens page for a signed-in browser.
pub(crate) async fn page(req: HttpRequest, signed_in: Result<Ctx, ConsoleError>) -> HttpResponse {
    if signed_in.is_ok() {
        return see_other("/console/tokens");
    }
    let query = Form::parse(req.query_string().as_bytes());
    let notice = if query.checked("expired") {
        Notice::Expired
    } else if query.checked("signed_out") {
        Notice::SignedOut
    } else {
        Notice::None
    };
    form_page(&req, StatusCode::OK, notice, &Problems::none())
}

/// `POST /console/sign-in`.
pub(crate) async fn sign_in(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<State>,
) -> Result<HttpResponse, ConsoleError> {
    let form = Form::read(&req, payload.into_inner(), SIGN_IN_BODY_LIMIT).await?;
    let expected = req.cookie(SIGN_IN_COOKIE).map(|c| c.value().to_string());
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
    let principal = match state.vault.authenticate(Some(key)).await {
        Ok(p) => p,
        Err(e) if e.class() == ErrorClass::Unauthenticated => {
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
    if let Some(old) = req.cookie(SESSION_COOKIE) {
        state.sessions.end(old.value());
    }
    let id = state
        .sessions
        .create(&principal, Secret::new(key.to_string()));
    tracing::info!(
        tenant = %principal.tenant_id(),
        application = %principal.application_id(),
        "console session opened"
    );
    let mut res = see_other("/console/tokens");
    let _ = res.add_cookie(&session_cookie(&req, SESSION_COOKIE, id));
    let _ = res.add_cookie(&removal_cookie(&req, SIGN_IN_COOKIE));
    Ok(res)
}

/// `POST /console/sign-out`: the session ends on the server.
pub(crate) async fn sign_out(posted: Posted) -> HttpResponse {
    let ctx = posted.ctx;
    ctx.state.sessions.remove(ctx.session.key);
    tracing::info!(application = %ctx.principal.application_id(), "console session closed");
    let mut res = see_other("/console?signed_out=1");
    let _ = res.add_cookie(&removal_cookie(&ctx.req, SESSION_COOKIE));
    res
}
