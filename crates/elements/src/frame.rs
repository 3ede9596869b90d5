//! `GET /elements/v1/frame.html`: the page inside the merchant's iframe, which holds the card.
//!
//! Who may frame it is decided when it loads: the public key and the embedding page's origin
//! travel in its URL, and the answer's `frame-ancestors` names that origin only if the key's
//! application lists it (docs/elements.md, "What the frame guarantees"). Otherwise the answer
//! is a refusal that no page may frame. The API origin the frame may send cards to is the
//! server's configuration, in `connect-src`; nothing the parent says can change it.

use actix_web::{
    http::{header, StatusCode},
    web, HttpResponse,
};
use serde::Deserialize;
use tessera_domain::{origin::Origin, ApplicationType, Vault};

use crate::{config::ElementsConfig, markup};

/// The frame's query: everything the parent chooses, all checked here or by the frame's
/// script (which reads the same parameters).
#[derive(Debug, Deserialize)]
pub(crate) struct FrameQuery {
    /// The public API key the frame creates tokens with.
    key: Option<String>,
    /// The origin of the page that embeds the frame (it must be the key's).
    origin: Option<String>,
    /// Which element: `card`, `cardNumber`, `cardExpirationDate`, `cardVerificationCode`,
    /// `text`.
    field: Option<String>,
}

/// Security headers of every frame answer, beside its CSP.
const FRAME_HEADERS: [(&str, &str); 4] = [
    ("x-content-type-options", "nosniff"),
    // The key is in the frame's URL: never send it on in a `Referer`.
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
    ("cross-origin-resource-policy", "cross-origin"),
];

/// The CSP of a frame embedded by `parent`, sending cards to `api`.
pub(crate) fn frame_policy(api: &Origin, parent: &Origin) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src {api}; frame-ancestors {parent}; base-uri 'none'; form-action 'none'"
    )
}

/// The CSP of a refusal: nothing runs, and no page may frame it.
const REFUSAL_POLICY: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/// Answers the frame, or a refusal no page can frame.
pub(crate) async fn frame(
    vault: web::Data<Vault>,
    config: web::Data<ElementsConfig>,
    query: web::Query<FrameQuery>,
) -> HttpResponse {
    let Some(field) = query.field.as_deref().and_then(markup::Field::parse) else {
        return refusal(StatusCode::BAD_REQUEST, "unknown field");
    };
    let Some(parent) = query.origin.as_deref().and_then(|o| Origin::parse(o).ok()) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "the embedding page's origin is missing",
        );
    };
    let allowed = match vault.authenticate(query.key.as_deref()).await {
        Ok(principal) => {
            principal.app_type() == ApplicationType::Public
                && principal.allows_browser_origin(parent.as_str())
        }
        Err(_) => false,
    };
    if !allowed {
        return refusal(
            StatusCode::FORBIDDEN,
            "this key is not a public key whose application allows the embedding page's origin",
        );
    }
    let mut res = HttpResponse::Ok();
    res.content_type("text/html; charset=utf-8").insert_header((
        header::CONTENT_SECURITY_POLICY,
        frame_policy(&config.api_origin, &parent),
    ));
    for (name, value) in FRAME_HEADERS {
        res.insert_header((name, value));
    }
    res.body(markup::page(field, &config))
}

fn refusal(status: StatusCode, why: &'static str) -> HttpResponse {
    let mut res = HttpResponse::build(status);
    res.content_type("text/plain; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, REFUSAL_POLICY));
    for (name, value) in FRAME_HEADERS {
        res.insert_header((name, value));
    }
    res.body(why)
}
