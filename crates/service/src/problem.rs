//! RFC 7807 problem bodies (docs/api.md, "Errors"), and how a domain error class is answered.
//!
//! Both boundaries render through [`Problem`]: the management API as `application/problem+json`,
//! the gateway wrapped as `{"proxy_error": problem}`. Converting an error never logs; the
//! boundary logs once, at the level [`class_log_level`] gives, when it answers.

use std::collections::BTreeMap;

use http::StatusCode;
use serde::Serialize;
use tessera_domain::{error::ErrorClass, ValidationErrors, VaultError};

/// Media type of management API error bodies.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Title of validation failures, as hosted vaults word it.
pub const VALIDATION_TITLE: &str = "One or more validation errors occurred.";

/// The body of an error response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    /// Always `about:blank`: the status says what kind of problem it is.
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "about:blank"))]
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

impl Problem {
    /// A problem with `status`, its canonical reason as title, and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail: Some(detail.into()),
            errors: None,
        }
    }

    /// A 400 listing field problems.
    pub fn validation(errors: &ValidationErrors) -> Self {
        Self {
            title: VALIDATION_TITLE.to_string(),
            errors: Some(errors.fields().clone()),
            ..Self::new(StatusCode::BAD_REQUEST, errors.to_string())
        }
    }

    /// The problem a domain error answers with: its class's status, and a message safe for
    /// the caller ([`VaultError::public_message`]).
    pub fn from_vault(e: &VaultError) -> Self {
        match e {
            VaultError::Validation(errors) => Self::validation(errors),
            VaultError::IdsTaken(taken) => Self::new(class_status(e.class()), e.public_message())
                .with_errors(
                    taken
                        .iter()
                        .map(|(label, _)| (format!("{label}id"), vec!["is already in use".into()]))
                        .collect(),
                ),
            other => Self::new(class_status(other.class()), other.public_message()),
        }
    }

    /// Replaces the title (a transform's error class name, say).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Adds an `errors` member.
    pub fn with_errors(mut self, errors: BTreeMap<String, Vec<String>>) -> Self {
        self.errors = Some(errors);
        self
    }

    /// The status as a [`StatusCode`].
    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The body bytes.
    pub fn to_json(&self) -> Vec<u8> {
        // A struct of strings and maps always serialises.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The body wrapped for the gateway: `{"proxy_error": problem}` (docs/api.md, "Proxy errors").
    pub fn to_proxy_error_json(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Wrapped<'a> {
            proxy_error: &'a Problem,
        }
        serde_json::to_vec(&Wrapped { proxy_error: self }).unwrap_or_default()
    }
}

/// The status every boundary answers an error class with (docs/api.md, "Errors").
pub fn class_status(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Invalid => StatusCode::BAD_REQUEST,
        ErrorClass::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorClass::Forbidden => StatusCode::FORBIDDEN,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::Conflict => StatusCode::CONFLICT,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// How loudly an answered error class is logged: the service's own faults as errors, the
/// callers' not at all (they are counted by status class).
pub fn class_log_level(class: ErrorClass) -> Option<tracing::Level> {
    match class {
        ErrorClass::Unavailable | ErrorClass::Internal => Some(tracing::Level::ERROR),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use tessera_domain::{error::Resource, store::StoreError, Permission};

    use super::*;

    /// The one mapping: statuses per docs/api.md, "Errors", internals never in the body.
    #[test]
    fn domain_errors_map_to_statuses_without_internals() {
        let cases = [
            (VaultError::NotFound(Resource::Token), 404),
            (VaultError::Unauthenticated("no key"), 401),
            (
                VaultError::Forbidden {
                    permission: Permission::TokenUse,
                    container: None,
                },
                403,
            ),
            (VaultError::Conflict("in use".into()), 409),
            (
                VaultError::Store(StoreError::Unavailable("pool timed out".into())),
                503,
            ),
            (
                VaultError::Store(StoreError::Timeout("pool timed out".into())),
                503,
            ),
            (
                VaultError::Store(StoreError::Backend("relation x does not exist".into())),
                500,
            ),
        ];
        for (error, status) in cases {
            let p = Problem::from_vault(&error);
            assert_eq!(p.status, status);
            let body = String::from_utf8(p.to_json()).expect("utf8");
            assert!(
                !body.contains("relation x") && !body.contains("pool timed out"),
                "{body}"
            );
        }
        let invalid = VaultError::Validation(ValidationErrors::single("name", "too long"));
        let p = Problem::from_vault(&invalid);
        assert_eq!((p.status, p.title.as_str()), (400, VALIDATION_TITLE));
        assert!(p.errors.is_some_and(|e| e.contains_key("name")));
    }

    #[test]
    fn proxy_errors_wrap_the_problem() {
        let p = Problem::new(StatusCode::BAD_GATEWAY, "unreachable");
        let v: serde_json::Value = serde_json::from_slice(&p.to_proxy_error_json()).expect("json");
        assert_eq!(v["proxy_error"]["status"], 502);
        assert_eq!(v["proxy_error"]["type"], "about:blank");
        assert_eq!(v["proxy_error"]["title"], "Bad Gateway");
    }
}
