//! Mounting the proxy handler (the gateway, wired in by the `api` binary) in the actix
//! management server at `/proxy` and `/proxy/{tail:.*}`.
//!
//! A thin adapter: the request's head is converted to `http` 1.x types and its payload handed
//! over as a body the handler reads itself — after it has checked the proxy key and the API
//! key, within its body timeout — and the response (streamed) converted back.

use std::sync::Arc;

use actix_web::{http::StatusCode as ActixStatus, web, HttpMessage, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyDataStream, StreamBody};
use tessera_service::mount::{BoxError, LocalBody, ProxyHandler, ResponseBody};

use crate::{problem::Problem, request_id::RequestId};

/// The body of every proxy error: the problem wrapped so that it cannot be mistaken for a
/// destination's own answer (docs/api.md, "Proxy errors").
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ProxyErrorBody {
    /// What went wrong in the proxy.
    pub proxy_error: Problem,
}

/// Registers the proxy routes for every method.
pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/proxy", web::to(invoke_root))
        .route("/proxy/{tail:.*}", web::to(invoke_path));
}

/// The OpenAPI operations of the proxy (the same handler serves them in `proxy-gateway`).
#[derive(utoipa::OpenApi)]
#[openapi(paths(invoke_root, invoke_path), components(schemas(ProxyErrorBody)))]
pub(crate) struct Doc;

/// Invokes a pre-configured proxy (or, with `SVC-PROXY-URL`, an ephemeral one): `{{token_id}}` expressions in the body and headers are
/// replaced by token data, the request transform runs, and the request goes to the proxy's
/// `destination_url`. The destination's answer comes back as it is (any status, any content
/// type) with `SVC-PROXY-DESTINATION-STATUS`, after the response transform on a 2xx. Only the
/// proxy's own failures are `{"proxy_error": …}`.
#[utoipa::path(method(get, post, put, patch, delete), path = "/proxy", tag = "proxy invocation",
    params(("SVC-PROXY-URL" = Option<String>, Header, description = "An ephemeral proxy: the absolute destination URL, instead of a proxy key (with `SVC-API-KEY`). Only destination-bound tokens are detokenized, each only for a host its binding allows.")),
    security(("proxy_key" = [], "api_key" = []), ("proxy_key_query" = [], "api_key" = []),
        ("proxy_key" = []), ("proxy_key_query" = []), ("api_key" = [])),
    request_body(description = "Any body. JSON, form-urlencoded and text bodies are detokenized; others pass through.",
        content((Object = "application/json"), (Object = "application/x-www-form-urlencoded"), (String = "text/plain"))),
    responses(
        (status = "default", description = "The destination's response, passed through.")))]
async fn invoke_root(
    req: HttpRequest,
    payload: web::Payload,
    handler: web::Data<Arc<dyn ProxyHandler>>,
) -> HttpResponse {
    invoke(req, payload, handler).await
}

/// As `/proxy`, with `/{path}` appended to the destination URL.
#[utoipa::path(method(get, post, put, patch, delete), path = "/proxy/{path}", tag = "proxy invocation",
    params(("path" = String, Path, description = "Appended to the destination URL after exactly one `/`."),
        ("SVC-PROXY-URL" = Option<String>, Header, description = "As for `/proxy`.")),
    security(("proxy_key" = [], "api_key" = []), ("proxy_key_query" = [], "api_key" = []),
        ("proxy_key" = []), ("proxy_key_query" = []), ("api_key" = [])),
    request_body(description = "As for `/proxy`.",
        content((Object = "application/json"), (Object = "application/x-www-form-urlencoded"), (String = "text/plain"))),
    responses(
        (status = "default", description = "The destination's response, passed through.")))]
async fn invoke_path(
    req: HttpRequest,
    payload: web::Payload,
    handler: web::Data<Arc<dyn ProxyHandler>>,
) -> HttpResponse {
    invoke(req, payload, handler).await
}

async fn invoke(
    req: HttpRequest,
    payload: web::Payload,
    handler: web::Data<Arc<dyn ProxyHandler>>,
) -> HttpResponse {
    let id = req
        .extensions()
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_else(tessera_service::request_id::new_id);
    let mut builder = http::Request::builder()
        .method(req.method().as_str())
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    let frames = payload.map(|chunk| {
        chunk
            .map(http_body::Frame::data)
            .map_err(|e| Box::new(std::io::Error::other(e.to_string())) as BoxError)
    });
    let body: LocalBody = Box::pin(StreamBody::new(frames));
    match builder.body(body) {
        Ok(request) => to_actix(handler.handle(request, &id).await),
        // The gateway's own answers are hardened for browsers by the gateway; this one, made
        // before it, carries the same two headers (docs/api.md, "What comes back").
        Err(e) => HttpResponse::BadRequest()
            .content_type("application/json")
            .insert_header(("x-content-type-options", "nosniff"))
            .insert_header(("content-security-policy", "sandbox"))
            .body(
                Problem::new(
                    http::StatusCode::BAD_REQUEST,
                    format!("unsupported request: {e}"),
                )
                .to_proxy_error_json(),
            ),
    }
}

fn to_actix(res: http::Response<ResponseBody>) -> HttpResponse {
    let (parts, body) = res.into_parts();
    let mut out = HttpResponse::build(
        ActixStatus::from_u16(parts.status.as_u16()).unwrap_or(ActixStatus::BAD_GATEWAY),
    );
    for (name, value) in &parts.headers {
        out.append_header((name.as_str(), value.as_bytes()));
    }
    // A body of known length (buffered errors and transformed answers, or a destination
    // answer with Content-Length) keeps its length; only bodies of unknown length are chunked.
    let exact = http_body::Body::size_hint(&body).exact();
    let stream = BodyDataStream::new(body)
        .map(|r: Result<Bytes, _>| r.map_err(|e| std::io::Error::other(e.to_string())));
    match exact {
        Some(length) => out.body(actix_web::body::SizedStream::new(length, stream)),
        None => out.streaming(stream),
    }
}
