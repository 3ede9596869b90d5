//! Mounting the gateway in the actix management server at `/proxy` and `/proxy/{tail:.*}`.
//!
//! A thin adapter: the request is converted to `http` 1.x types, handled by [`Gateway`], and
//! the response (streamed) converted back.

use std::sync::Arc;

use actix_web::{http::StatusCode as ActixStatus, web, HttpMessage, HttpRequest, HttpResponse};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http_body_util::BodyDataStream;

use super::{Gateway, ProxyBody};
use crate::request_id::RequestId;

/// Registers the proxy routes for every method.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/proxy", web::to(invoke))
        .route("/proxy/{tail:.*}", web::to(invoke));
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
    let stream = BodyDataStream::new(body)
        .map(|r: Result<Bytes, _>| r.map_err(|e| std::io::Error::other(e.to_string())));
    out.streaming(stream)
}
