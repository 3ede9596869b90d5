//! The middleware around every console response: the request id, the security headers, and
//! an HTML page (with those headers) for any error a framework layer answers with in plain
//! text, so that no console response — page, redirect, asset or error — leaves without them.

use actix_web::{
    body::{BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    error::InternalError,
    http::{
        header::{self, HeaderMap, HeaderName, HeaderValue},
        StatusCode,
    },
    middleware::Next,
    Error, HttpMessage,
};

use crate::views;

/// The Content-Security-Policy of every console response (docs/console.md): nothing but the
/// console's own files, no inline script, no plugins, never framed, forms posted only to the
/// console itself and no `<base>` that could redirect its relative links.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; script-src 'self'; object-src 'none'; \
     frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// The headers every console response carries, with their values.
pub const SECURITY_HEADERS: [(&str, &str); 6] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
    // For browsers that predate `frame-ancestors`.
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
];

/// The request id of a console request (echoed `X-Request-Id`, else generated); audit events
/// carry it.
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub(crate) String);

static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

fn apply(headers: &mut HeaderMap, request_id: &str) {
    for (name, value) in SECURITY_HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if !headers.contains_key(&X_REQUEST_ID) {
        if let Ok(value) = HeaderValue::from_str(request_id) {
            headers.insert(X_REQUEST_ID.clone(), value);
        }
    }
}

/// Anything outside the console on its listener (`/proxy` included): the console's own 404
/// page, with the console's headers.
pub(crate) async fn not_found(req: actix_web::HttpRequest) -> actix_web::HttpResponse {
    let id = tessera_service::request_id::choose(
        req.headers()
            .get(&X_REQUEST_ID)
            .and_then(|v| v.to_str().ok()),
    );
    let mut res = views::errors::status_page(StatusCode::NOT_FOUND);
    apply(res.headers_mut(), &id);
    res
}

fn is_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/html"))
}

/// The middleware; see the module docs.
pub(crate) async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let id = tessera_service::request_id::choose(
        req.headers()
            .get(&X_REQUEST_ID)
            .and_then(|v| v.to_str().ok()),
    );
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut res = match next.call(req).await {
        Ok(res) => res.map_into_boxed_body(),
        // Handlers and extractors answer with responses; an `Err` can only come from the
        // framework itself. It still gets a page with the headers.
        Err(err) => {
            let status = err.as_response_error().status_code();
            tracing::warn!(status = status.as_u16(), error = %err, "console request failed");
            let mut response = views::errors::status_page(status);
            apply(response.headers_mut(), &id);
            return Err(InternalError::from_response(err, response).into());
        }
    };
    let status = res.status();
    if (status.is_client_error() || status.is_server_error()) && !is_html(res.headers()) {
        // actix's own answers (405, 404, a payload error) are plain text: replace them.
        let (req, _) = res.into_parts();
        res = ServiceResponse::new(req, views::errors::status_page(status));
    }
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(request_id = %id, "console answered 500");
    }
    apply(res.headers_mut(), &id);
    Ok(res)
}
