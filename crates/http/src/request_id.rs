//! Per-request middleware: assigns the request id, logs one line per request, counts it and
//! times it per route (`/metrics`), and turns any
//! error response that is not already problem+json (actix's own 404/405, a panic-free internal
//! error) into one, so no failure ever answers in plain text.

use std::time::Instant;

use actix_web::{
    body::{BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    error::InternalError,
    http::header::{self, HeaderName, HeaderValue},
    middleware::Next,
    Error, HttpMessage, ResponseError,
};
use tracing::Instrument;

use tessera_service::metrics::Component;

use crate::{
    problem::{ApiError, PROBLEM_JSON},
    state::ApiState,
};

/// The request-id header.
pub(crate) static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The request's id, available to handlers through request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// The caller's `X-Request-Id`, else its `<PREFIX>-TRACE-ID` (what Basis Theory's SDKs send),
/// else a new id.
fn choose_id(req: &ServiceRequest) -> String {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let trace = req
        .app_data::<actix_web::web::Data<ApiState>>()
        .and_then(|s| header(s.config.names.trace_id.as_str()));
    tessera_service::request_id::choose_either(header(tessera_service::request_id::HEADER), trace)
}

/// The middleware; see the module docs.
pub(crate) async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let id = choose_id(&req);
    req.extensions_mut().insert(RequestId(id.clone()));
    let method = req.method().clone();
    let path = req.path().to_string();
    // Proxied responses belong to the destination: never rewritten, counted by the gateway.
    let proxied = tessera_service::mount::is_proxy_path(&path);
    let metrics = req
        .app_data::<actix_web::web::Data<ApiState>>()
        .map(|s| (s.metrics.requests.clone(), s.metrics.routes.clone()));
    let span = tracing::info_span!("request", request_id = %id, %method, %path);
    let started = Instant::now();
    let result = next.call(req).instrument(span.clone()).await;
    let mut res = match result {
        Ok(res) => res.map_into_boxed_body(),
        // Handlers and extractors answer with responses; an `Err` here comes from the
        // framework itself. Render it as a problem carrying the request id. (The request cannot
        // be kept for a `ServiceResponse`: cloning it before routing breaks routing.)
        Err(err) => {
            let status = err.as_response_error().status_code();
            span.in_scope(
                || tracing::warn!(status = status.as_u16(), error = %err, "request failed"),
            );
            let mut response = ApiError::new(status, status.canonical_reason().unwrap_or("error"))
                .error_response();
            if let Ok(value) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(X_REQUEST_ID.clone(), value);
            }
            return Err(InternalError::from_response(err, response).into());
        }
    };
    let status = res.status();
    let is_problem = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        // An HTML error page was rendered on purpose (the web console mounted beside the API):
        // it is that page's answer, and keeps its own headers.
        .is_some_and(|ct| {
            ct.starts_with(PROBLEM_JSON)
                || ct.starts_with("application/json")
                || ct.starts_with("text/html")
        });
    if (status.is_client_error() || status.is_server_error()) && !is_problem && !proxied {
        let detail = match status.as_u16() {
            404 => "no such route".to_string(),
            405 => "this route does not accept that method".to_string(),
            _ => status.canonical_reason().unwrap_or("error").to_string(),
        };
        let (req, _) = res.into_parts();
        res = ServiceResponse::new(req, ApiError::new(status, detail).error_response());
    }
    if !res.headers().contains_key(&X_REQUEST_ID) {
        if let Ok(value) = HeaderValue::from_str(&id) {
            res.headers_mut().insert(X_REQUEST_ID.clone(), value);
        }
    }
    if let (Some((requests, routes)), false) = (metrics, proxied) {
        requests.record(Component::Api, status.as_u16());
        let route = res.request().match_pattern();
        routes.observe(route.as_deref(), method.as_str(), started.elapsed());
    }
    span.in_scope(|| {
        tracing::info!(
            status = status.as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "handled"
        );
    });
    Ok(res)
}
