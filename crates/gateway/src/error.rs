//! The gateway's one error model: a [`GatewayError`] is a [`ErrorKind`] plus what the caller
//! may be told and, for the log, what caused it. The kind alone decides the status, the metric
//! label and the log level; the body is always `{"proxy_error": <RFC 7807 problem>}` (source
//! docs/api.md, "Proxy invocation" and "Proxy errors"). A destination's own errors are never wrapped: they are not
//! `GatewayError`s. Converting an error never logs; [`crate::Gateway`] logs once, when it answers.

use std::{borrow::Cow, collections::BTreeMap};

use bytes::Bytes;
use http::{header, HeaderValue, Response};
use http_body_util::{BodyExt, Full};
use tessera_detokenize::DetokenizeError;
use tessera_domain::{error::ErrorClass, VaultError};
use tessera_service::{mount::BoxError, mount::ResponseBody, problem::Problem};

pub use tessera_service::proxy_error::ErrorKind;

/// A failure of the proxy itself.
#[derive(Debug)]
pub struct GatewayError {
    kind: ErrorKind,
    // Boxed: every stage returns `Result<_, GatewayError>`, and failures are the rare path.
    details: Box<Details>,
}

#[derive(Debug)]
struct Details {
    /// What the caller is told: never secrets.
    detail: Cow<'static, str>,
    /// A transform's error class name, used as the problem's title.
    title: Option<String>,
    /// A transform's `errors` member.
    errors: Option<BTreeMap<String, Vec<String>>>,
    retry_after: Option<u64>,
    /// What caused it, for the log only.
    source: Option<BoxError>,
}

impl GatewayError {
    /// An error of `kind` telling the caller `detail`.
    pub fn new(kind: ErrorKind, detail: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            details: Box::new(Details {
                detail: detail.into(),
                title: None,
                errors: None,
                retry_after: None,
                source: None,
            }),
        }
    }

    /// Keeps `source` for the log (never shown to the caller).
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.details.source = Some(source.into());
        self
    }

    /// Adds `Retry-After` (seconds).
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.details.retry_after = Some(seconds);
        self
    }

    /// A transform's error class: its name as title and its message as the `error` entry.
    pub fn with_class(mut self, name: String, message: String) -> Self {
        self.details.title = Some(name);
        self.details.errors = Some(BTreeMap::from([("error".to_string(), vec![message])]));
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What the caller is told.
    pub fn detail(&self) -> &str {
        &self.details.detail
    }

    /// The cause kept for the log.
    pub fn source(&self) -> Option<&BoxError> {
        self.details.source.as_ref()
    }

    /// The problem body.
    pub fn problem(&self) -> Problem {
        let mut problem = Problem::new(self.kind.status(), self.details.detail.clone());
        if let Some(title) = &self.details.title {
            problem = problem.with_title(title.clone());
        }
        if let Some(errors) = &self.details.errors {
            problem = problem.with_errors(errors.clone());
        }
        problem
    }

    /// The response: `{"proxy_error": problem}` as `application/json`.
    pub fn into_response(self) -> Response<ResponseBody> {
        let body = Bytes::from(self.problem().to_proxy_error_json());
        let mut res = Response::new(Full::new(body).map_err(|e| match e {}).boxed());
        *res.status_mut() = self.kind.status();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = self.details.retry_after {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        res
    }
}

impl From<VaultError> for GatewayError {
    /// The management API's classes, except that an unknown token (or one of another tenant)
    /// is the caller's mistake in the request: 400, not 404.
    fn from(e: VaultError) -> Self {
        let kind = match e.class() {
            ErrorClass::Invalid | ErrorClass::NotFound | ErrorClass::Conflict => {
                ErrorKind::BadRequest
            }
            ErrorClass::Unauthenticated => ErrorKind::Unauthenticated,
            ErrorClass::Forbidden => ErrorKind::Forbidden,
            ErrorClass::Unavailable => ErrorKind::Unavailable,
            ErrorClass::Internal => ErrorKind::Internal,
        };
        GatewayError::new(kind, e.public_message()).with_source(e)
    }
}

impl From<DetokenizeError> for GatewayError {
    fn from(e: DetokenizeError) -> Self {
        let kind = match e {
            DetokenizeError::TooLarge { .. } => ErrorKind::TooLarge,
            _ => ErrorKind::BadRequest,
        };
        GatewayError::new(kind, e.to_string())
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
            let e = GatewayError::from(error);
            assert_eq!(e.kind().status().as_u16(), status, "{}", e.detail());
            assert!(!e.detail().contains("relation x"), "{}", e.detail());
            assert!(!e.detail().contains("pool timed out"), "{}", e.detail());
        }
    }
}
