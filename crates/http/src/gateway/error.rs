//! Proxy errors: `{"proxy_error": <RFC 7807 problem>}` with `Content-Type: application/json`
//! (source §2.6, SUPPLEMENT §5.1). A destination's own errors are never wrapped.

use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use std::collections::BTreeMap;

use serde::Serialize;
use tessera_detokenize::DetokenizeError;
use tessera_domain::VaultError;

use super::ProxyBody;
use crate::problem::{ApiError, Problem};

/// The body of every proxy error: the problem wrapped so that it cannot be mistaken for a
/// destination's own answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProxyErrorBody {
    /// What went wrong in the proxy.
    pub proxy_error: Problem,
}

/// A failure of the proxy itself.
#[derive(Debug, Clone)]
pub struct ProxyError {
    status: StatusCode,
    detail: String,
    title: Option<String>,
    errors: Option<BTreeMap<String, Vec<String>>>,
    retry_after: Option<u64>,
}

impl ProxyError {
    /// A proxy error with `status` and a detail message (never secret material).
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            title: None,
            errors: None,
            retry_after: None,
        }
    }

    /// Adds a `Retry-After` header (seconds) to the response.
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// Overrides the title (a transform's error class name).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an `errors` member.
    pub fn with_errors(mut self, errors: BTreeMap<String, Vec<String>>) -> Self {
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
        let title = self.title.unwrap_or_else(|| {
            self.status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string()
        });
        let body = ProxyErrorBody {
            proxy_error: Problem {
                kind: "about:blank",
                title,
                status: self.status.as_u16(),
                detail: Some(self.detail),
                errors: self.errors,
            },
        };
        // Serialising this plain struct cannot fail; an empty body would still carry the status.
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let mut res = Response::new(Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
        *res.status_mut() = self.status;
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = self.retry_after {
            res.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        }
        res
    }
}

impl From<VaultError> for ProxyError {
    /// The management API's mapping ([`ApiError`]), except that an unknown token is the
    /// caller's mistake in the request (400), not a missing resource.
    fn from(e: VaultError) -> Self {
        let unknown = matches!(e, VaultError::NotFound(_));
        let api = ApiError::from(e);
        let status = if unknown {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::from_u16(api.status().as_u16()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        };
        ProxyError::new(status, api.detail())
    }
}

impl From<DetokenizeError> for ProxyError {
    fn from(e: DetokenizeError) -> Self {
        let status = match e {
            DetokenizeError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_REQUEST,
        };
        ProxyError::new(status, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use tessera_domain::{error::Resource, store::StoreError, Permission};

    use super::*;

    /// The gateway answers as the management API does, except that an unknown token is a 400;
    /// internal details never reach the caller.
    #[test]
    fn vault_errors_map_like_the_api() {
        let cases = [
            (VaultError::NotFound(Resource::Token), 400),
            (VaultError::Unauthenticated("no key"), 401),
            (
                VaultError::Forbidden {
                    permission: Permission::TokenUse,
                    container: None,
                },
                403,
            ),
            (
                VaultError::Store(StoreError::Unavailable("pool timed out".into())),
                503,
            ),
            (
                VaultError::Store(StoreError::Backend("relation x does not exist".into())),
                500,
            ),
        ];
        for (error, status) in cases {
            let e = ProxyError::from(error);
            assert_eq!(e.status().as_u16(), status, "{}", e.detail());
            assert!(!e.detail().contains("relation x"), "{}", e.detail());
            assert!(!e.detail().contains("pool timed out"), "{}", e.detail());
        }
    }
}
