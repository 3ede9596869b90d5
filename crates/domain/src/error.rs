//! The error every use-case returns.

use std::fmt;

use crate::{
    container::Container, crypto::CryptoError, permission::Permission, store::StoreError,
    validation::ValidationErrors,
};

/// What kind of resource was not found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// A tenant.
    Tenant,
    /// An application.
    Application,
    /// A token.
    Token,
    /// A parent → child link.
    Association,
    /// A proxy.
    Proxy,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Tenant => "tenant",
            Resource::Application => "application",
            Resource::Token => "token",
            Resource::Association => "association",
            Resource::Proxy => "proxy",
        })
    }
}

/// Why a use-case failed. Variants map one-to-one onto the status codes of SUPPLEMENT §1.1; no
/// variant ever carries secret material.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The input broke a rule (400).
    #[error("validation failed: {0}")]
    Validation(ValidationErrors),
    /// No usable credential (401).
    #[error("{0}")]
    Unauthenticated(&'static str),
    /// The credential lacks a permission (403).
    #[error("the API key lacks `{permission}`{}", .container.as_ref().map(|c| format!(" on container {c}")).unwrap_or_default())]
    Forbidden {
        /// The missing permission.
        permission: Permission,
        /// Where it was needed, for container-scoped token permissions.
        container: Option<Container>,
    },
    /// Absent, or owned by another tenant (404): the two are deliberately indistinguishable.
    #[error("{0} not found")]
    NotFound(Resource),
    /// The operation conflicts with other state (409).
    #[error("{0}")]
    Conflict(String),
    /// The store failed (500, or 503 when unavailable).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Decryption or encryption failed (500): wrong master key or a tampered row.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
}

impl From<ValidationErrors> for VaultError {
    fn from(e: ValidationErrors) -> Self {
        VaultError::Validation(e)
    }
}
