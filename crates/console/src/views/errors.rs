//! Pages for what went wrong: "Not permitted", "Not found", conflicts, outages, and the plain
//! status pages the security middleware puts in place of the framework's text answers.

use actix_web::{http::StatusCode, HttpResponse};
use maud::{html, Markup};
use tessera_domain::{error::ErrorClass, VaultError};
use tessera_service::problem::class_status;

use super::{html, layout};

/// The title, status and body of a failed use-case, in the API's words.
pub(crate) fn failure(error: &VaultError) -> (StatusCode, &'static str, Markup) {
    let status = StatusCode::from_u16(class_status(error.class()).as_u16())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = error.public_message();
    let (title, explanation) = match error.class() {
        ErrorClass::Forbidden => (
            "Not permitted",
            "The application you signed in with may not do this.",
        ),
        ErrorClass::NotFound => (
            "Not found",
            "There is no such item in your tenant, or it has expired or been deleted.",
        ),
        ErrorClass::Conflict => (
            "Cannot be done now",
            "Something else depends on this; change that first.",
        ),
        ErrorClass::Unauthenticated => ("Signed out", "Your key is no longer accepted."),
        ErrorClass::Invalid => ("Invalid request", "The request was refused."),
        ErrorClass::Unavailable => (
            "Service unavailable",
            "The database cannot be reached. Try again shortly.",
        ),
        ErrorClass::Internal => ("Something went wrong", "The server failed to answer."),
    };
    let body = html! {
        div.notice.(title.to_lowercase().replace(' ', "-")) role="alert" {
            p.lead { (explanation) }
            p { "The vault said: " q { (message) } }
        }
    };
    (status, title, body)
}

/// A page outside a session: `title` and `message`, with a way back to the console.
pub(crate) fn message_page(status: StatusCode, title: &str, message: &str) -> HttpResponse {
    html(
        status,
        layout::bare(
            title,
            html! {
                div.notice role="alert" { p { (message) } }
                p { a href="/console" { "Back to the console" } }
            },
        ),
    )
}

/// The page for a bare status (a route that does not exist, a method it does not take).
pub(crate) fn status_page(status: StatusCode) -> HttpResponse {
    let (title, message) = match status.as_u16() {
        404 => ("Not found", "There is no such page in the console."),
        405 => ("Not allowed", "This page does not accept that method."),
        413 => ("Too large", "The form is larger than the server accepts."),
        400..=499 => ("Request refused", "The request could not be understood."),
        _ => (
            "Something went wrong",
            "The server failed to answer; try again.",
        ),
    };
    message_page(status, title, message)
}
