//! Who is asking: the extractors every signed-in route takes.
//!
//! * [`Ctx`]: a live session whose key the vault still accepts, as a [`Principal`]; without
//!   one the browser is sent to the sign-in page (`303 See Other` to `/console`).
//! * [`Posted`]: a [`Ctx`] plus the form body, whose `csrf` field must equal the session's
//!   token (compared in constant time), else `403`. Every POST route but sign-in takes it, so
//!   a route cannot forget the check.

use std::{future::Future, pin::Pin};

use actix_web::{
    dev::Payload, http::StatusCode, web, FromRequest, HttpMessage, HttpRequest, HttpResponse,
};
use maud::Markup;
use tessera_domain::{
    vault::{tokens_match, ConsoleSession, SessionLookup},
    ApplicationId, Principal, VaultError,
};

use crate::{
    error::ConsoleError,
    form::Form,
    names::Names,
    security::RequestId,
    session::{self, Presented},
    state::State,
    views::{self, layout::Chrome, Section},
};

/// A signed-in request.
pub(crate) struct Ctx {
    pub(crate) state: web::Data<State>,
    /// The signed-in application, as the vault resolved its key just now.
    pub(crate) principal: Principal,
    pub(crate) session: ConsoleSession,
    /// The signed-in application's name (any key may read its own application); `None`
    /// when it could not be read, and the footer shows the id alone.
    pub(crate) app_name: Option<String>,
    pub(crate) request_id: String,
    pub(crate) req: HttpRequest,
}

impl Ctx {
    async fn load(req: &HttpRequest) -> Result<Self, ConsoleError> {
        let Some(state) = req.app_data::<web::Data<State>>().cloned() else {
            return Err(ConsoleError::Unavailable("console state missing".into()));
        };
        let id = match session::presented(req) {
            Presented::None => return Err(ConsoleError::SignIn { expired: false }),
            Presented::One(id) => id,
            Presented::Several(ids) => {
                for id in ids {
                    let hash = tessera_domain::vault::session_id_hash(&id);
                    if let Err(e) = state.vault.end_console_session(&hash).await {
                        return Err(ConsoleError::Unavailable(e.public_message()));
                    }
                }
                tracing::warn!(
                    path = req.path(),
                    "console request with several session cookies: signed out"
                );
                return Err(ConsoleError::SeveralSessions(session::clear_everywhere(
                    req,
                )));
            }
        };
        let session = match state.vault.console_session(&id, state.limits).await {
            Ok(SessionLookup::Live(session)) => *session,
            Ok(SessionLookup::Ended) => return Err(ConsoleError::SignIn { expired: true }),
            Ok(SessionLookup::Unknown) => return Err(ConsoleError::SignIn { expired: false }),
            Err(e) => return Err(ConsoleError::Unavailable(e.public_message())),
        };
        let principal = session.principal.clone();
        let request_id = req
            .extensions()
            .get::<RequestId>()
            .map(|r| r.0.clone())
            .unwrap_or_else(tessera_service::request_id::new_id);
        let app_name = match state.vault.calling_application(&principal).await {
            Ok(app) => Some(app.name),
            Err(e) => {
                tracing::debug!(request_id = %request_id, error = %e, "the signed-in application's name was not read");
                None
            }
        };
        Ok(Self {
            state,
            principal,
            session,
            app_name,
            request_id,
            req: req.clone(),
        })
    }

    /// The names of the applications `ids`, looked up once for the page (the signed-in
    /// application's always known); see [`Names`].
    pub(crate) async fn names(&self, ids: impl IntoIterator<Item = ApplicationId>) -> Names {
        Names::of(&self.state.vault, &self.principal, ids)
            .await
            .with(self.principal.application_id(), self.app_name.as_deref())
    }

    /// The page chrome (navigation, sign-out form) for `section`.
    pub(crate) fn chrome(&self, section: Section) -> Chrome<'_> {
        Chrome {
            csrf: self.session.csrf.expose(),
            section,
            principal: &self.principal,
            app_name: self.app_name.as_deref(),
        }
    }

    /// A full page.
    pub(crate) fn page(
        &self,
        status: StatusCode,
        section: Section,
        title: &str,
        body: Markup,
    ) -> HttpResponse {
        views::html(
            status,
            views::layout::page(&self.chrome(section), title, body),
        )
    }

    /// A 200 page.
    pub(crate) fn ok(&self, section: Section, title: &str, body: Markup) -> HttpResponse {
        self.page(StatusCode::OK, section, title, body)
    }

    /// The page for a use-case that failed other than by invalid input: "Not permitted",
    /// "Not found", a conflict explained, or the service's own failure.
    pub(crate) fn failure(&self, section: Section, error: &VaultError) -> HttpResponse {
        let (status, title, body) = views::errors::failure(error);
        self.page(status, section, title, body)
    }
}

impl FromRequest for Ctx {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ConsoleError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { Ctx::load(&req).await })
    }
}

/// A signed-in POST with its form, whose CSRF token was checked.
pub(crate) struct Posted {
    pub(crate) ctx: Ctx,
    pub(crate) form: Form,
}

impl FromRequest for Posted {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ConsoleError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let payload = payload.take();
        Box::pin(async move {
            let ctx = Ctx::load(&req).await?;
            let form = Form::read(&req, payload, ctx.state.config.max_body_bytes).await?;
            if !tokens_match(form.get("csrf"), ctx.session.csrf.expose()) {
                tracing::warn!(request_id = %ctx.request_id, path = req.path(), "console POST refused: CSRF token missing or wrong");
                return Err(ConsoleError::Csrf);
            }
            Ok(Posted { ctx, form })
        })
    }
}
