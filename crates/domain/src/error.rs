//! The error every use-case returns, and the storage failure it may carry.

use std::fmt;

use crate::{
    container::Container, crypto::CryptoError, permission::Permission, validation::ValidationErrors,
};

/// Why the store failed. Messages never include secret values.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or a connection could not be had.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A uniqueness or foreign-key constraint refused the write.
    #[error("conflicting write: {0}")]
    Conflict(String),
    /// A statement ran past the configured time limit (`--query-timeout`) and was stopped.
    #[error("the query ran past the time limit: {0}")]
    Timeout(String),
    /// A stored row could not be understood.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// Any other database error.
    #[error("database error: {0}")]
    Backend(String),
}

/// What kind of resource was not found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// A tenant.
    Tenant,
    /// An application.
    Application,
    /// One of an application's keys.
    ApplicationKey,
    /// A token.
    Token,
    /// A parent → child link.
    Association,
    /// A proxy.
    Proxy,
    /// A webhook.
    Webhook,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Tenant => "tenant",
            Resource::Application => "application",
            Resource::ApplicationKey => "application key",
            Resource::Token => "token",
            Resource::Association => "association",
            Resource::Proxy => "proxy",
            Resource::Webhook => "webhook",
        })
    }
}

/// Why a use-case failed. Variants map one-to-one onto the status codes of docs/api.md, "Errors"; no
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
    /// The caller asked to grant, or to obtain a key for, a permission it does not hold
    /// itself (403; docs/api.md, "No escalation").
    #[error("the API key cannot grant `{permission}`{} because it does not hold it itself", .container.as_ref().map(|c| format!(" on container {c}")).unwrap_or_default())]
    Escalation {
        /// The permission the caller lacks.
        permission: Permission,
        /// Where, for container-scoped token permissions.
        container: Option<Container>,
    },
    /// A caller tried to give an application a transform showing more of the data than its
    /// own on some container (403; docs/api.md, "No escalation").
    #[error("the API key cannot grant the `{transform}` transform on container {container}: its own there is `{held}`")]
    TransformEscalation {
        /// The transform asked for.
        transform: crate::data_transform::DataTransform,
        /// The caller's own transform there.
        held: crate::data_transform::DataTransform,
        /// Where.
        container: Container,
    },
    /// The operation answers whether a guess equals stored data (deduplication, a `data:` or
    /// `fingerprint:` search term, rendering over stored data), so it needs the plaintext:
    /// `token:read` with a `reveal` transform on the container (403).
    #[error("this needs `token:read` with the `reveal` transform on container {0}")]
    RevealNeeded(Container),
    /// A token may not go where the request goes (403): its destination binding does not
    /// allow the host, or an ephemeral proxy was asked to carry an unbound token.
    #[error("{0}")]
    DestinationRefused(String),
    /// The operation is not open to this kind of key (403), whatever its permissions: a
    /// `public` key choosing a token's id.
    #[error("{0}")]
    KeyTypeRefused(&'static str),
    /// Absent, or owned by another tenant (404): the two are deliberately indistinguishable.
    #[error("{0} not found")]
    NotFound(Resource),
    /// The operation conflicts with other state (409).
    #[error("{0}")]
    Conflict(String),
    /// Token ids chosen by the caller are already in use in its tenant (409): each with the
    /// label of the request that chose it (`[3].`, `card.`, or nothing), in request order.
    #[error("{}", taken_ids_message(.0))]
    IdsTaken(Vec<(String, crate::ids::TokenId)>),
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

/// How a [`VaultError`] is answered, whatever the boundary (management API, gateway, `req.svc`):
/// each class has one status and one log level, decided in one place (`tessera-service`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The caller's input broke a rule.
    Invalid,
    /// No usable credential.
    Unauthenticated,
    /// The credential lacks a permission.
    Forbidden,
    /// Absent, or another tenant's.
    NotFound,
    /// Conflicts with other state.
    Conflict,
    /// The database could not be reached: worth retrying.
    Unavailable,
    /// A fault of the service (a corrupt row, a wrong key): never the caller's.
    Internal,
}

/// The message of [`VaultError::IdsTaken`]: every id, and where each was chosen.
fn taken_ids_message(taken: &[(String, crate::ids::TokenId)]) -> String {
    let named: Vec<String> = taken
        .iter()
        .map(|(label, id)| {
            if label.is_empty() {
                id.to_string()
            } else {
                format!("{id} (`{label}id`)")
            }
        })
        .collect();
    match named.as_slice() {
        [one] if taken.len() == 1 && taken[0].0.is_empty() => {
            format!("the token id {one} is already in use")
        }
        _ => format!(
            "token ids chosen in this request are already in use: {}; nothing was stored",
            named.join(", ")
        ),
    }
}

impl VaultError {
    /// The class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            VaultError::Validation(_) => ErrorClass::Invalid,
            VaultError::Unauthenticated(_) => ErrorClass::Unauthenticated,
            VaultError::Forbidden { .. }
            | VaultError::Escalation { .. }
            | VaultError::TransformEscalation { .. }
            | VaultError::RevealNeeded(_)
            | VaultError::DestinationRefused(_)
            | VaultError::KeyTypeRefused(_) => ErrorClass::Forbidden,
            VaultError::NotFound(_) => ErrorClass::NotFound,
            VaultError::Conflict(_) | VaultError::IdsTaken(_) => ErrorClass::Conflict,
            VaultError::Store(StoreError::Unavailable(_) | StoreError::Timeout(_))
            | VaultError::Crypto(
                CryptoError::CustodyUnavailable(_) | CryptoError::UnknownKeyVersion(_),
            ) => ErrorClass::Unavailable,
            VaultError::Store(_) | VaultError::Crypto(_) => ErrorClass::Internal,
        }
    }

    /// What may be said to the caller: the error itself for the caller's own faults, a
    /// generic sentence for the service's (whose messages may name internals).
    pub fn public_message(&self) -> String {
        match self.class() {
            ErrorClass::Unavailable if matches!(self, VaultError::Store(StoreError::Timeout(_))) => {
                "the query took longer than the server allows; narrow it or retry later".to_string()
            }
            ErrorClass::Unavailable if matches!(self, VaultError::Crypto(_)) => {
                "the key service (HSM or KMS) is unavailable; retry later".to_string()
            }
            ErrorClass::Unavailable => "the database is unavailable; retry later".to_string(),
            ErrorClass::Internal => "an internal error occurred; the X-Request-Id of this response identifies it in the server log".to_string(),
            _ => self.to_string(),
        }
    }
}
