//! RFC 7807 problem responses, and the mapping from domain errors to HTTP statuses.

use std::collections::BTreeMap;

use actix_web::{http::StatusCode, HttpResponse, ResponseError};
use serde::Serialize;
use tessera_domain::{store::StoreError, ValidationErrors, VaultError};

/// Media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The body of an error response.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// Always `about:blank`: the status says what kind of problem it is.
    #[serde(rename = "type")]
    #[schema(value_type = String, example = "about:blank")]
    pub kind: &'static str,
    /// Short summary of the status.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong with this request. Never holds secrets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Field problems, keyed by field path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<BTreeMap<String, Vec<String>>>,
}

/// An error that renders as problem+json.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    title: String,
    detail: Option<String>,
    errors: Option<BTreeMap<String, Vec<String>>>,
}

/// Title of validation failures, as hosted vaults word it.
pub const VALIDATION_TITLE: &str = "One or more validation errors occurred.";

impl ApiError {
    /// A problem with `status` and a detail message.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            detail: Some(detail.into()),
            errors: None,
        }
    }

    /// A 400 listing field problems.
    pub fn validation(errors: &ValidationErrors) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            title: VALIDATION_TITLE.to_string(),
            detail: Some(errors.to_string()),
            errors: Some(errors.fields().clone()),
        }
    }

    /// A 400 for one field.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::validation(&ValidationErrors::single(field, message))
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The detail message (never secret material).
    pub fn detail(&self) -> &str {
        self.detail.as_deref().unwrap_or(&self.title)
    }

    /// The body.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: "about:blank",
            title: self.title.clone(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            errors: self.errors.clone(),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            self.status,
            self.detail.as_deref().unwrap_or(&self.title)
        )
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status)
            .content_type(PROBLEM_JSON)
            .json(self.problem())
    }
}

/// The one mapping of domain errors to statuses and safe messages. The gateway
/// ([`crate::gateway::ProxyError`]) and transforms' `req.svc` calls reuse it, so that a failure
/// answers the same status wherever it surfaces.
impl From<VaultError> for ApiError {
    fn from(e: VaultError) -> Self {
        match &e {
            VaultError::Validation(errors) => ApiError::validation(errors),
            VaultError::Unauthenticated(_) => {
                ApiError::new(StatusCode::UNAUTHORIZED, e.to_string())
            }
            VaultError::Forbidden { .. } => ApiError::new(StatusCode::FORBIDDEN, e.to_string()),
            VaultError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, e.to_string()),
            VaultError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            VaultError::Store(StoreError::Unavailable(_)) => {
                tracing::error!(error = %e, "database unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the database is unavailable; retry later",
                )
            }
            VaultError::Store(_) | VaultError::Crypto(_) => {
                // The message may name internals; log it, answer generically.
                tracing::error!(error = %e, "internal error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "an internal error occurred; the X-Request-Id of this response identifies it in the server log",
                )
            }
        }
    }
}
