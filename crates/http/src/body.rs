//! `JsonBody<T>`: a JSON request body with the error behaviour of docs/api.md, "Errors" — 415 for
//! another content type, 413 above the size limit, 400 problem+json naming the offending field
//! for malformed JSON, unknown fields and wrong types.

use std::{future::Future, pin::Pin};

use actix_web::{
    dev::Payload,
    http::{header, StatusCode},
    web::{self, BytesMut},
    FromRequest, HttpMessage, HttpRequest,
};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::{
    problem::ApiError,
    state::ApiState,
    strict_json::{repeated_member, Strict},
};

/// A deserialised JSON body.
pub(crate) struct JsonBody<T>(pub T);

/// A JSON body as its bytes: declared JSON and within the size limit, not yet parsed (for a
/// handler whose body has several forms, parsed once it knows which with [`parse_json`]).
pub(crate) struct JsonBytes(pub web::Bytes);

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body exceeds the limit of {limit} bytes"),
    )
}

/// Reads a whole body of at most `limit` bytes (413 above it: at once when `Content-Length`
/// says so, else as soon as the stream passes it).
pub(crate) fn read_limited(
    req: &HttpRequest,
    mut payload: Payload,
    limit: usize,
) -> impl Future<Output = Result<web::Bytes, ApiError>> + 'static {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    async move {
        if declared.is_some_and(|n| n > limit) {
            return Err(too_large(limit));
        }
        let mut buf = BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk
                .map_err(|e| ApiError::field("body", format!("could not read the body: {e}")))?;
            if buf.len() + chunk.len() > limit {
                return Err(too_large(limit));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    }
}

/// The body limit configured for this app.
pub(crate) fn body_limit(req: &HttpRequest) -> usize {
    req.app_data::<web::Data<ApiState>>()
        .map_or(tessera_service::DEFAULT_MAX_BODY_BYTES, |s| {
            s.config.max_body_bytes
        })
}

/// Whether the request declares a JSON body (`application/json` or any `+json` type).
pub(crate) fn is_json(req: &HttpRequest) -> bool {
    req.mime_type().ok().flatten().is_some_and(|m| {
        m.type_() == "application"
            && (m.subtype() == "json" || m.suffix().is_some_and(|s| s == "json"))
    })
}

/// Parses `bytes` as `T`, reporting the path of the first problem. Structs are read only from
/// JSON objects (see [`Strict`]).
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(Strict(&mut de)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let mut field = if path == "." || path.is_empty() {
            String::new()
        } else {
            path
        };
        let message = inner.to_string();
        if let Some(name) = repeated_member(crate::json_shapes::without_position(&message)) {
            // The path is the object's (ending in `?`, the name not yet read); the problem
            // names the member in it.
            let object = field.strip_suffix('?').unwrap_or(&field);
            let object = object.strip_suffix('.').unwrap_or(object);
            let at = if object.is_empty() {
                name.to_string()
            } else {
                format!("{object}.{name}")
            };
            return ApiError::field(
                &at,
                "is repeated: a member name may appear only once in an object",
            );
        }
        // serde reports a missing field at its parent's path; key the error by the field itself.
        if let Some(missing) = missing_field(&inner.to_string()) {
            field = if field.is_empty() {
                missing
            } else {
                format!("{field}.{missing}")
            };
        }
        if field.is_empty() {
            field = "body".to_string();
        }
        if (inner.is_syntax() || inner.is_eof())
            && !(message.starts_with("expected value") && is_valid_json(bytes))
        {
            ApiError::field("body", format!("malformed JSON: {inner}"))
        } else if inner.is_syntax() {
            // serde_json reports a number or array where a string of a fixed set belongs as
            // a syntax error ("expected value"), though the document is well formed.
            ApiError::field(&field, "expected one of the accepted strings")
        } else {
            ApiError::field(&field, crate::json_shapes::plain(&inner.to_string()))
        }
    })?;
    de.end()
        .map_err(|e| ApiError::field("body", format!("malformed JSON: {e}")))?;
    Ok(value)
}

/// Whether `bytes` is one well-formed JSON document.
fn is_valid_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// The field name in serde's "missing field `x`" message.
fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split_once('`').map(|(name, _)| name.to_string())
}

/// The body of a request that must declare JSON (415 otherwise), read up to the limit.
fn json_bytes(
    req: &HttpRequest,
    payload: &mut Payload,
) -> Pin<Box<dyn Future<Output = Result<web::Bytes, ApiError>>>> {
    if !is_json(req) {
        return Box::pin(async {
            Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "this endpoint accepts only Content-Type: application/json",
            ))
        });
    }
    Box::pin(read_limited(req, payload.take(), body_limit(req)))
}

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let read = json_bytes(req, payload);
        Box::pin(async move { parse_json(&read.await?).map(JsonBody) })
    }
}

impl FromRequest for JsonBytes {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let read = json_bytes(req, payload);
        Box::pin(async move { read.await.map(JsonBytes) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct T {
        name: String,
        inner: Option<Inner>,
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        n: u8,
    }

    fn field_of(body: &str) -> String {
        let e = parse_json::<T>(body.as_bytes()).expect_err("should fail");
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        e.problem()
            .errors
            .expect("errors")
            .keys()
            .next()
            .cloned()
            .expect("a field")
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field_of(r#"{"name": 1}"#), "name");
        assert_eq!(field_of(r#"{"name": "a", "inner": {"n": "x"}}"#), "inner.n");
        assert_eq!(field_of(r#"{"name": "a", "typo": 1}"#), "typo");
        assert_eq!(field_of(r#"{}"#), "name");
        assert_eq!(field_of(r#"{"name": "a", "inner": {}}"#), "inner.n");
        assert_eq!(field_of(r#"{"name": "#), "body");
        assert_eq!(field_of(r#"{"name": "a"} trailing"#), "body");
        assert_eq!(field_of(r#"{"name": "a", "name": "b"}"#), "name");
        assert_eq!(
            field_of(r#"{"name": "a", "inner": {"n": 1, "n": 2}}"#),
            "inner.n"
        );
        assert_eq!(
            parse_json::<T>(br#"{"name": "a", "inner": {"n": 7}}"#).expect("parses"),
            T {
                name: "a".into(),
                inner: Some(Inner { n: 7 }),
            }
        );
    }
}
