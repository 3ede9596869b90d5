//! The console's pages, as maud templates: every interpolated value is HTML-escaped; nothing
//! in them is ever marked pre-escaped but the doctype.

pub(crate) mod applications;
pub(crate) mod audit;
pub(crate) mod components;
pub(crate) mod errors;
pub(crate) mod layout;
pub(crate) mod proxies;
pub(crate) mod sign_in;
pub(crate) mod token;
pub(crate) mod tokens;
pub(crate) mod webhooks;

use actix_web::{
    http::{header, StatusCode},
    HttpResponse,
};
use maud::Markup;

/// The navigation section a page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Tokens,
    Proxies,
    Applications,
    Webhooks,
    Audit,
}

impl Section {
    /// Every section, in navigation order, with its link and label.
    pub(crate) const ALL: [(Section, &'static str, &'static str); 5] = [
        (Section::Tokens, "/console/tokens", "Tokens"),
        (Section::Proxies, "/console/proxies", "Proxies"),
        (
            Section::Applications,
            "/console/applications",
            "Applications",
        ),
        (Section::Webhooks, "/console/webhooks", "Webhooks"),
        (Section::Audit, "/console/audit", "Audit trail"),
    ];
}

/// An HTML response.
pub(crate) fn html(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .body(markup.into_string())
}

/// A `303 See Other` to `location`.
pub(crate) fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location.to_string()))
        .finish()
}
