//! Mounting the gateway in the actix management server at `/proxy` and `/proxy/{tail:.*}`.
//!
//! A thin adapter: the request is converted to `http` 1.x types, handled by [`Gateway`], and
//! the response (streamed) converted back.

use std::sync::Arc;

use actix_web::{http::StatusCode as ActixStatus, web, HttpMessage, HttpRequest, HttpResponse};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http_body_util::BodyDataStream;

use super::{error::ProxyErrorBody, Gateway, ProxyBody};
use crate::request_id::RequestId;

/// Registers the proxy routes for every method.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/proxy", web::to(invoke_root))
        .route("/proxy/{tail:.*}", web::to(invoke_path));
}

/// The OpenAPI operations of the proxy (the same handler serves them in `proxy-gateway`).
#[derive(utoipa::OpenApi)]
#[openapi(paths(invoke_root, invoke_path))]
pub(crate) struct Doc;

/// Invokes a pre-configured proxy: `{{token_id}}` expressions in the body and headers are
/// replaced by token data, the request transform runs, and the request goes to the proxy's
/// `destination_url`. The destination's answer comes back as it is (any status, any content
/// type) with `SVC-PROXY-DESTINATION-STATUS`, after the response transform on a 2xx. Only the
/// proxy's own failures are `{"proxy_error": …}`.
#[utoipa::path(method(get, post, put, patch, delete), path = "/proxy", tag = "proxy invocation",
    security(("proxy_key" = [], "api_key" = []), ("proxy_key_query" = [], "api_key" = []),
        ("proxy_key" = []), ("proxy_key_query" = [])),
    request_body(description = "Any body. JSON, form-urlencoded and text bodies are detokenized; others pass through.",
        content((Object = "application/json"), (Object = "application/x-www-form-urlencoded"), (String = "text/plain"))),
    responses(
        (status = "default", description = "The destination's response, passed through."),
        (status = 400, description = "Bad expression, unknown token, or a header value that would hold CR/LF/NUL.", body = ProxyErrorBody),
        (status = 401, description = "Missing or unknown proxy key; or `require_auth` and no valid `SVC-API-KEY`.", body = ProxyErrorBody),
        (status = 403, description = "The key lacks `token:use` on a token's container.", body = ProxyErrorBody),
        (status = 413, description = "The body is above the limit.", body = ProxyErrorBody),
        (status = 429, description = "The proxy is over the rate limit configured with `--rate-limit`; `Retry-After` says when to retry.", body = ProxyErrorBody),
        (status = 500, description = "The transform failed.", body = ProxyErrorBody),
        (status = 503, description = "The database is unavailable.", body = ProxyErrorBody),
        (status = 502, description = "Destination unreachable, TLS failure, or address refused by the SSRF guard.", body = ProxyErrorBody),
        (status = 504, description = "The destination did not answer in time.", body = ProxyErrorBody)))]
async fn invoke_root(
    req: HttpRequest,
    payload: web::Payload,
    gateway: web::Data<Arc<Gateway>>,
) -> HttpResponse {
    invoke(req, payload, gateway).await
}

/// As `/proxy`, with `/{path}` appended to the destination URL.
#[utoipa::path(method(get, post, put, patch, delete), path = "/proxy/{path}", tag = "proxy invocation",
    params(("path" = String, Path, description = "Appended to the destination URL after exactly one `/`.")),
    security(("proxy_key" = [], "api_key" = []), ("proxy_key_query" = [], "api_key" = []),
        ("proxy_key" = []), ("proxy_key_query" = [])),
    request_body(description = "As for `/proxy`.",
        content((Object = "application/json"), (Object = "application/x-www-form-urlencoded"), (String = "text/plain"))),
    responses(
        (status = "default", description = "The destination's response, passed through."),
        (status = 400, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 401, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 403, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 413, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 429, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 500, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 503, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 502, description = "As for `/proxy`.", body = ProxyErrorBody),
        (status = 504, description = "As for `/proxy`.", body = ProxyErrorBody)))]
async fn invoke_path(
    req: HttpRequest,
    payload: web::Payload,
    gateway: web::Data<Arc<Gateway>>,
) -> HttpResponse {
    invoke(req, payload, gateway).await
}

async fn invoke(
    req: HttpRequest,
    mut payload: web::Payload,
    gateway: web::Data<Arc<Gateway>>,
) -> HttpResponse {
    let id = req
        .extensions()
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let limit = gateway.max_body_bytes();
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        match chunk {
            Ok(chunk) if body.len() + chunk.len() > limit => {
                return to_actix(gateway.body_too_large())
            }
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(e) => {
                return to_actix(
                    super::ProxyError::new(
                        http::StatusCode::BAD_REQUEST,
                        format!("could not read the request body: {e}"),
                    )
                    .into_response(),
                )
            }
        }
    }
    let mut builder = http::Request::builder()
        .method(req.method().as_str())
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    match builder.body(body.freeze()) {
        Ok(request) => to_actix(gateway.handle(request, &id).await),
        Err(e) => to_actix(
            super::ProxyError::new(
                http::StatusCode::BAD_REQUEST,
                format!("unsupported request: {e}"),
            )
            .into_response(),
        ),
    }
}

fn to_actix(res: http::Response<ProxyBody>) -> HttpResponse {
    let (parts, body) = res.into_parts();
    let mut out = HttpResponse::build(
        ActixStatus::from_u16(parts.status.as_u16()).unwrap_or(ActixStatus::BAD_GATEWAY),
    );
    for (name, value) in &parts.headers {
        out.append_header((name.as_str(), value.as_bytes()));
    }
    // A body of known length (buffered errors and transformed answers, or a destination
    // answer with Content-Length) keeps its length; only bodies of unknown length are chunked.
    let exact = hyper::body::Body::size_hint(&body).exact();
    let stream = BodyDataStream::new(body)
        .map(|r: Result<Bytes, _>| r.map_err(|e| std::io::Error::other(e.to_string())));
    match exact {
        Some(length) => out.body(actix_web::body::SizedStream::new(length, stream)),
        None => out.streaming(stream),
    }
}
