//! The management API's error: a [`Problem`] (RFC 7807, `application/problem+json`) and, for
//! the log, what caused it. Domain errors convert through the one mapping of
//! `tessera-service` (the gateway and `req.svc` use the same one). Converting never logs; the
//! response is logged once, at its class's level, when it is rendered.

use std::collections::BTreeMap;

use actix_web::{http::StatusCode, HttpResponse, ResponseError};
use tessera_domain::{ValidationErrors, VaultError};
use tessera_service::problem::{class_log_level, Problem as Body};

pub(crate) use tessera_service::problem::{Problem, PROBLEM_JSON};

/// An error that renders as problem+json.
#[derive(Debug)]
pub struct ApiError {
    // Boxed: handlers return `Result<_, ApiError>` everywhere, and the problem is large.
    problem: Box<Body>,
    retry_after: Option<u64>,
    /// The level to log at when rendered, and what to log.
    log: Option<Box<(tracing::Level, String)>>,
}

fn to_http1(status: StatusCode) -> http::StatusCode {
    http::StatusCode::from_u16(status.as_u16()).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR)
}

impl ApiError {
    /// A problem with `status` and a detail message.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self::from_problem(Body::new(to_http1(status), detail))
    }

    fn from_problem(problem: Body) -> Self {
        Self {
            problem: Box::new(problem),
            retry_after: None,
            log: None,
        }
    }

    /// A 400 listing field problems.
    pub fn validation(errors: &ValidationErrors) -> Self {
        Self::from_problem(Body::validation(errors))
    }

    /// A 400 for one field.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::validation(&ValidationErrors::single(field, message))
    }

    /// A 429 telling the caller when to retry.
    pub fn rate_limited(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "this API key is over its rate limit; retry after Retry-After seconds",
            )
        }
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The detail message (never secret material).
    pub fn detail(&self) -> &str {
        self.problem
            .detail
            .as_deref()
            .unwrap_or(&self.problem.title)
    }

    /// The field problems, if any.
    pub fn errors(&self) -> Option<&BTreeMap<String, Vec<String>>> {
        self.problem.errors.as_ref()
    }

    /// The body.
    pub fn problem(&self) -> Problem {
        (*self.problem).clone()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.problem.status, self.detail())
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        match self.log.as_deref() {
            Some((tracing::Level::ERROR, cause)) => {
                tracing::error!(status = self.problem.status, cause, "request failed")
            }
            Some((_, cause)) => {
                tracing::warn!(status = self.problem.status, cause, "request failed")
            }
            None => {}
        }
        let mut res = HttpResponse::build(self.status());
        res.content_type(PROBLEM_JSON);
        if let Some(seconds) = self.retry_after {
            res.insert_header((actix_web::http::header::RETRY_AFTER, seconds));
        }
        let mut response = res.body(self.problem.to_json());
        if matches!(self.problem.status, 401 | 403) {
            response
                .extensions_mut()
                .insert(crate::audit::DenialReason(self.detail().to_string()));
        }
        response
    }
}

impl From<VaultError> for ApiError {
    fn from(e: VaultError) -> Self {
        Self {
            problem: Box::new(Body::from_vault(&e)),
            retry_after: None,
            log: class_log_level(e.class()).map(|level| Box::new((level, e.to_string()))),
        }
    }
}
