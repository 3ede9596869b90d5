//! `transform_request` and `transform_response` (SUPPLEMENT §7): building `req.args`,
//! answering `req.svc` calls as the proxy's application, and applying what the transform
//! returns (or threw). The destination's non-2xx answers are relayed untouched.

use std::collections::HashMap;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{json, Map, Value};
use tessera_detokenize::BodyKind;
use tessera_domain::{
    proxy::Proxy, token::TokenView, NewToken, Principal, TokenId, Vault, VaultError,
};
use tessera_service::{mount::ResponseBody, problem::class_status};
use tessera_transform_runtime::{HostError, HostOp, Outcome, TransformEngine, TransformError};

use super::{respond::relay, Halt, Outgoing};
use crate::{
    context::RequestContext,
    destination,
    error::{ErrorKind, GatewayError},
    headers, Gateway,
};

/// Largest destination body a response transform may be given.
const MAX_TRANSFORMED_RESPONSE: usize = 10 * 1024 * 1024;

impl Gateway {
    pub(crate) async fn transform_request(
        &self,
        ctx: &mut RequestContext<'_>,
        proxy: &Proxy,
        outgoing: Outgoing,
    ) -> Result<Outgoing, Halt> {
        let Some(code) = &proxy.request_transform else {
            return Ok(outgoing);
        };
        let engine = self.engine()?;
        let query = ctx
            .parts
            .uri
            .query()
            .map(destination::strip_proxy_key)
            .filter(|q| !q.is_empty())
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        let args = json!({
            "body": decode_body(&outgoing.headers, &outgoing.body),
            "headers": headers_json(&outgoing.headers),
            "method": ctx.parts.method.as_str(),
            "path": ctx.suffix(),
            "query": query,
        });
        let (new_body, new_headers) =
            settle(run(engine, &self.vault, proxy, code.expose(), args).await)?;
        let mut headers = replace_headers(new_headers, outgoing.headers)
            .map_err(|e| failed(format!("transform failed: {e}")))?;
        let body = encode_body(new_body, &headers, outgoing.body);
        headers::strip_request(&mut headers);
        Ok(Outgoing { headers, body })
    }

    pub(crate) async fn transform_response(
        &self,
        ctx: &mut RequestContext<'_>,
        proxy: &Proxy,
        answer: Response<Incoming>,
    ) -> Result<Response<ResponseBody>, Halt> {
        let code = match &proxy.response_transform {
            Some(code) if answer.status().is_success() => code,
            _ => return Ok(relay(answer, ctx.request_id)),
        };
        let engine = self.engine()?;
        let (parts, body) = answer.into_parts();
        let body = Limited::new(body, MAX_TRANSFORMED_RESPONSE)
            .collect()
            .await
            .map_err(|e| {
                GatewayError::new(
                    ErrorKind::Unreachable,
                    "the destination's response could not be read for the response transform",
                )
                .with_source(e)
            })?
            .to_bytes();
        let args = json!({
            "body": decode_body(&parts.headers, &body),
            "headers": headers_json(&parts.headers),
            "status": parts.status.as_u16(),
        });
        let (new_body, new_headers) =
            settle(run(engine, &self.vault, proxy, code.expose(), args).await)?;
        let mut headers = replace_headers(new_headers, parts.headers)
            .map_err(|e| failed(format!("transform failed: {e}")))?;
        let body = encode_body(new_body, &headers, body);
        headers::strip_response(&mut headers);
        super::respond::mark_proxied(&mut headers, parts.status, ctx.request_id);
        let mut out = Response::new(Full::new(body).map_err(|e| match e {}).boxed());
        *out.status_mut() = parts.status;
        *out.headers_mut() = headers;
        Ok(out)
    }

    fn engine(&self) -> Result<&TransformEngine, GatewayError> {
        self.transforms.as_ref().ok_or_else(|| {
            GatewayError::new(
                ErrorKind::Internal,
                "this gateway runs without a transform engine",
            )
        })
    }
}

use http_body_util::Limited;

/// `req.args.body`: JSON and form bodies as objects, anything else as a string.
fn decode_body(headers: &HeaderMap, body: &[u8]) -> Value {
    let kind = BodyKind::from_content_type(
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    match kind {
        BodyKind::Json => serde_json::from_slice(body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned())),
        BodyKind::Form => {
            let mut map = Map::new();
            for (k, v) in form_urlencoded::parse(body) {
                let value = Value::String(v.into_owned());
                match map.get_mut(k.as_ref()) {
                    Some(Value::Array(values)) => values.push(value),
                    Some(existing) => *existing = Value::Array(vec![existing.clone(), value]),
                    None => {
                        map.insert(k.into_owned(), value);
                    }
                }
            }
            Value::Object(map)
        }
        _ => Value::String(String::from_utf8_lossy(body).into_owned()),
    }
}

/// Headers as an object of lowercased names; repeated headers are joined with `, `.
fn headers_json(headers: &HeaderMap) -> Value {
    let mut map = Map::new();
    for name in headers.keys() {
        let joined: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        map.insert(name.as_str().to_string(), Value::String(joined.join(", ")));
    }
    Value::Object(map)
}

/// What a returned `body` becomes: a string as it is; anything else encoded in the message's
/// content type (form for form bodies, JSON otherwise); absent → the original body.
fn encode_body(body: Option<Value>, headers: &HeaderMap, original: Bytes) -> Bytes {
    match body {
        None => original,
        Some(Value::String(s)) => Bytes::from(s),
        Some(Value::Object(map))
            if BodyKind::from_content_type(
                headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok()),
            ) == BodyKind::Form =>
        {
            let mut out = form_urlencoded::Serializer::new(String::new());
            for (k, v) in &map {
                match v {
                    Value::Array(items) => {
                        for item in items {
                            out.append_pair(k, &text(item));
                        }
                    }
                    other => {
                        out.append_pair(k, &text(other));
                    }
                }
            }
            Bytes::from(out.finish())
        }
        Some(other) => Bytes::from(other.to_string()),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Returned `headers` replace the header set; absent → unchanged. Values may be strings,
/// numbers, booleans or arrays of them.
fn replace_headers(returned: Option<Value>, current: HeaderMap) -> Result<HeaderMap, String> {
    let Some(returned) = returned else {
        return Ok(current);
    };
    let Value::Object(map) = returned else {
        return Err("`headers` must be an object".into());
    };
    let mut out = HeaderMap::with_capacity(map.len());
    for (name, value) in map {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name `{name}`"))?;
        let values = match value {
            Value::Array(items) => items,
            Value::Null => continue,
            other => vec![other],
        };
        for v in values {
            let v = HeaderValue::from_str(&text(&v))
                .map_err(|_| format!("invalid value for header `{name}`"))?;
            out.append(name.clone(), v);
        }
    }
    Ok(out)
}

/// A transform failure (500 `proxy_error`).
fn failed(detail: String) -> GatewayError {
    GatewayError::new(ErrorKind::TransformFailed, detail)
}

/// What a transform returned: `(body, headers)`, each absent when not returned.
type Returned = (Option<Value>, Option<Value>);

/// The answer for an outcome that ends the invocation (an error class, a custom response, a
/// crash); `Ok` carries the returned body and headers on.
fn settle(outcome: Result<Outcome, TransformError>) -> Result<Returned, Halt> {
    match outcome {
        Ok(Outcome::Ok { body, headers }) => Ok((body, headers)),
        Ok(Outcome::Http {
            status,
            name,
            message,
        }) => Err(
            GatewayError::new(ErrorKind::TransformRefused(status), message.clone())
                .with_class(name, message)
                .into(),
        ),
        Ok(Outcome::Custom {
            status,
            headers,
            body,
        }) => {
            // 1xx answers carry no body and would break the framing of whatever sits in front
            // (attack finding): only final statuses a response may have.
            let Some(status) = StatusCode::from_u16(status)
                .ok()
                .filter(|s| (200..=599).contains(&s.as_u16()))
            else {
                return Err(failed(
                    "transform failed: CustomHttpResponseError needs a status from 200 to 599"
                        .into(),
                )
                .into());
            };
            let mut headers = replace_headers(headers, HeaderMap::new())
                .map_err(|e| failed(format!("transform failed: {e}")))?;
            headers::strip_response(&mut headers);
            let body = match body {
                None | Some(Value::Null) => Bytes::new(),
                Some(Value::String(s)) => Bytes::from(s),
                Some(other) => Bytes::from(other.to_string()),
            };
            let mut res = Response::new(Full::new(body).map_err(|e| match e {}).boxed());
            *res.status_mut() = status;
            *res.headers_mut() = headers;
            if !res.headers().contains_key(header::CONTENT_TYPE) {
                res.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
            }
            Err(Halt::Answer(Box::new(res)))
        }
        Err(e @ (TransformError::TimedOut | TransformError::OutOfMemory)) => {
            Err(failed(e.to_string()).into())
        }
        Err(TransformError::Crashed(message)) => {
            Err(failed(format!("transform failed: {message}")).into())
        }
        Err(TransformError::Engine(message)) => Err(GatewayError::new(
            ErrorKind::TransformFailed,
            "transform failed: the transform engine is unavailable",
        )
        .with_source(message)
        .into()),
    }
}

/// The status and message the management API would have answered (SUPPLEMENT §7).
fn host_error(e: VaultError) -> HostError {
    HostError {
        status: class_status(e.class()).as_u16(),
        message: e.public_message(),
    }
}

/// One `req.svc` call, made in-process as the proxy's application with its permissions.
async fn host_call(
    vault: &Vault,
    principal: &Principal,
    op: HostOp,
    payload: Value,
) -> Result<Value, HostError> {
    let bad = |m: String| HostError {
        status: 400,
        message: m,
    };
    let create = |request: Value| async move {
        let input: NewToken = serde_json::from_value(request)
            .map_err(|e| bad(format!("invalid token request: {e}")))?;
        let token = vault
            .create_token(principal, input)
            .await
            .map_err(host_error)?;
        serde_json::to_value(TokenView::without_data(token)).map_err(|e| bad(e.to_string()))
    };
    let id = |payload: &Value| {
        payload
            .as_str()
            .and_then(|s| s.parse::<TokenId>().ok())
            .ok_or_else(|| HostError {
                status: 400,
                message: "a token id is required".into(),
            })
    };
    match op {
        HostOp::Tokenize => match payload {
            Value::Array(requests) => {
                let mut out = Vec::with_capacity(requests.len());
                for request in requests {
                    out.push(create(request).await?);
                }
                Ok(Value::Array(out))
            }
            request => create(request).await,
        },
        HostOp::Create => create(payload).await,
        HostOp::Retrieve => {
            let token = vault
                .get_token(principal, id(&payload)?)
                .await
                .map_err(host_error)?;
            serde_json::to_value(TokenView::with_data(token)).map_err(|e| bad(e.to_string()))
        }
        HostOp::Delete => {
            vault
                .delete_token(principal, id(&payload)?)
                .await
                .map_err(host_error)?;
            Ok(json!({}))
        }
    }
}

/// Runs `code` with `args`; `req.svc` acts as the proxy's application when it has one.
async fn run(
    engine: &TransformEngine,
    vault: &Vault,
    proxy: &Proxy,
    code: &str,
    args: Value,
) -> Result<Outcome, TransformError> {
    let program = engine
        .compile(code)
        .map_err(|e| TransformError::Crashed(format!("does not compile: {e}")))?;
    let configuration: HashMap<String, String> = proxy
        .configuration
        .as_ref()
        .map(|c| c.expose().clone().into_iter().collect())
        .unwrap_or_default();
    let input = json!({"args": args, "configuration": configuration});
    let (tenant, proxy_id) = (proxy.tenant_id.to_string(), proxy.id.to_string());
    let principal = match proxy.application_id {
        Some(app) => Some(
            vault
                .application_principal(proxy.tenant_id, app)
                .await
                .map_err(|e| {
                    TransformError::Crashed(format!(
                        "the proxy's application is unavailable: {}",
                        e.public_message()
                    ))
                })?,
        ),
        None => None,
    };
    let host = principal
        .as_ref()
        .map(|p| move |op: HostOp, payload: Value| host_call(vault, p, op, payload));
    engine
        .run(program, &proxy_id, (&tenant, &proxy_id), input, host)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `req.svc` refusals carry the status the API would have answered (SUPPLEMENT §7).
    #[test]
    fn host_errors_carry_the_api_status() {
        use tessera_domain::{error::Resource, store::StoreError};
        let e = host_error(VaultError::NotFound(Resource::Token));
        assert_eq!((e.status, e.message.as_str()), (404, "token not found"));
        let e = host_error(VaultError::Store(StoreError::Unavailable("down".into())));
        assert_eq!(e.status, 503);
        assert!(!e.message.contains("down"), "{}", e.message);
        let e = host_error(VaultError::Store(StoreError::Backend(
            "secret detail".into(),
        )));
        assert_eq!(e.status, 500);
        assert!(!e.message.contains("secret"), "{}", e.message);
    }

    #[test]
    fn bodies_decode_and_encode_by_content_type() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert_eq!(
            decode_body(&h, b"a=1&b=x%20y&a=2"),
            json!({"a": ["1", "2"], "b": "x y"})
        );
        let out = encode_body(Some(json!({"a": ["1", "2"], "b": "x y"})), &h, Bytes::new());
        assert_eq!(&out[..], b"a=1&a=2&b=x+y");
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        assert_eq!(decode_body(&h, b"{\"n\":1}"), json!({"n": 1}));
        assert_eq!(decode_body(&h, b"not json"), json!("not json"));
        assert_eq!(
            &encode_body(Some(json!({"n": 1})), &h, Bytes::new())[..],
            b"{\"n\":1}"
        );
        assert_eq!(
            &encode_body(Some(json!("raw")), &h, Bytes::new())[..],
            b"raw"
        );
        assert_eq!(
            &encode_body(None, &h, Bytes::from_static(b"orig"))[..],
            b"orig"
        );
        assert_eq!(decode_body(&HeaderMap::new(), b"plain"), json!("plain"));
    }

    #[test]
    fn returned_headers_replace_the_set() {
        let mut current = HeaderMap::new();
        current.insert("x-old", HeaderValue::from_static("1"));
        let out = replace_headers(
            Some(json!({"x-new": "a", "x-n": 5, "x-many": ["1", "2"], "x-null": null})),
            current.clone(),
        )
        .expect("valid");
        assert!(out.get("x-old").is_none());
        assert_eq!(out.get("x-n").and_then(|v| v.to_str().ok()), Some("5"));
        assert_eq!(out.get_all("x-many").iter().count(), 2);
        assert!(replace_headers(Some(json!({"bad name": "x"})), current.clone()).is_err());
        assert!(replace_headers(Some(json!({"x": "a\nb"})), current.clone()).is_err());
        assert_eq!(
            replace_headers(None, current.clone()).expect("kept").len(),
            1
        );
    }
}
