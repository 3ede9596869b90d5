//! Proxy errors: `{"proxy_error": <RFC 7807 problem>}` with `Content-Type: application/json`
//! (source §2.6, SUPPLEMENT §5.1). A destination's own errors are never wrapped.

use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use tessera_detokenize::DetokenizeError;
use tessera_domain::{store::StoreError, VaultError};

use super::ProxyBody;

/// A failure of the proxy itself.
#[derive(Debug, Clone)]
pub struct ProxyError {
    status: StatusCode,
    detail: String,
    title: Option<String>,
    errors: Option<serde_json::Value>,
}

impl ProxyError {
    /// A proxy error with `status` and a detail message (never secret material).
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            title: None,
            errors: None,
        }
    }

    /// Overrides the title (a transform's error class name).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an `errors` member.
    pub fn with_errors(mut self, errors: serde_json::Value) -> Self {
        self.errors = Some(errors);
        self
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The detail message.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The response.
    pub fn into_response(self) -> Response<ProxyBody> {
        let mut problem = json!({
            "type": "about:blank",
            "title": self.title.as_deref().unwrap_or(self.status.canonical_reason().unwrap_or("Error")),
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        if let Some(errors) = self.errors {
            problem["errors"] = errors;
        }
        let body = json!({ "proxy_error": problem });
        let mut res = Response::new(
            Full::new(Bytes::from(body.to_string()))
                .map_err(|e| match e {})
                .boxed(),
        );
        *res.status_mut() = self.status;
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        res
    }
}

impl From<VaultError> for ProxyError {
    fn from(e: VaultError) -> Self {
        match &e {
            VaultError::Unauthenticated(_) => {
                ProxyError::new(StatusCode::UNAUTHORIZED, e.to_string())
            }
            VaultError::Forbidden { .. } => ProxyError::new(StatusCode::FORBIDDEN, e.to_string()),
            VaultError::Validation(_) => ProxyError::new(StatusCode::BAD_REQUEST, e.to_string()),
            VaultError::NotFound(_) => ProxyError::new(StatusCode::BAD_REQUEST, e.to_string()),
            VaultError::Conflict(_) => ProxyError::new(StatusCode::CONFLICT, e.to_string()),
            VaultError::Store(StoreError::Unavailable(_)) => {
                tracing::error!(error = %e, "database unavailable");
                ProxyError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the database is unavailable; retry later",
                )
            }
            VaultError::Store(_) | VaultError::Crypto(_) => {
                tracing::error!(error = %e, "internal error");
                ProxyError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "an internal error occurred; the X-Request-Id of this response identifies it in the server log",
                )
            }
        }
    }
}

impl From<DetokenizeError> for ProxyError {
    fn from(e: DetokenizeError) -> Self {
        ProxyError::new(StatusCode::BAD_REQUEST, e.to_string())
    }
}
