//! Why a console request cannot go on, and the answer each reason renders: the sign-in page,
//! a refused form, or "service unavailable".

use actix_web::{http::StatusCode, HttpResponse, ResponseError};

use crate::{
    mount::MOUNT,
    views::{self, see_other},
};

/// Why a request cannot go on; each renders its own answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConsoleError {
    /// No live session: to the sign-in page (`expired`: one existed and ended).
    #[error("not signed in")]
    SignIn {
        /// Whether a session existed and has ended.
        expired: bool,
    },
    /// Several session cookies at once (one may be planted): every session they named has
    /// ended; the answer clears the cookies (these removals) and asks for sign-in.
    #[error("several session cookies")]
    SeveralSessions(Vec<actix_web::cookie::Cookie<'static>>),
    /// A POST without this session's CSRF token.
    #[error("missing or wrong CSRF token")]
    Csrf,
    /// The form could not be read (too large, not a form).
    #[error("{message}")]
    Body {
        /// The status to answer.
        status: StatusCode,
        /// What went wrong.
        message: String,
    },
    /// The vault could not be asked (database down).
    #[error("{0}")]
    Unavailable(String),
}

impl From<crate::form::FormRefused> for ConsoleError {
    fn from(refused: crate::form::FormRefused) -> Self {
        ConsoleError::Body {
            status: refused.status,
            message: refused.message,
        }
    }
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignIn { .. } | ConsoleError::SeveralSessions(_) => StatusCode::SEE_OTHER,
            ConsoleError::Csrf => StatusCode::FORBIDDEN,
            ConsoleError::Body { status, .. } => *status,
            ConsoleError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            ConsoleError::SignIn { expired } => {
                let location = if *expired {
                    format!("{MOUNT}?expired=1")
                } else {
                    MOUNT.to_string()
                };
                see_other(&location)
            }
            ConsoleError::SeveralSessions(removals) => {
                let mut res = see_other(&format!("{MOUNT}?expired=1"));
                for removal in removals {
                    // Adding a cookie to a response built here cannot fail.
                    let _ = res.add_cookie(removal);
                }
                res
            }
            ConsoleError::Csrf => views::errors::message_page(
                StatusCode::FORBIDDEN,
                "Form refused",
                "This form did not come from your current console session (its security token \
                 is missing or belongs to another session). Reload the page and try again.",
            ),
            ConsoleError::Body { status, message } => {
                views::errors::message_page(*status, "Form refused", message)
            }
            ConsoleError::Unavailable(message) => views::errors::message_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service unavailable",
                message,
            ),
        }
    }
}
