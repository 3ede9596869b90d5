//! The messages exchanged with a transform: what goes in, what comes out, and the host calls
//! `req.svc` makes on the way.

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::oneshot;

/// A `req.svc` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostOp {
    /// `tokenize(request | [request])`.
    Tokenize,
    /// `tokens.create(request)`.
    Create,
    /// `tokens.retrieve(id)`.
    Retrieve,
    /// `tokens.delete(id)`.
    Delete,
}

impl HostOp {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "tokenize" => Some(HostOp::Tokenize),
            "tokens.create" => Some(HostOp::Create),
            "tokens.retrieve" => Some(HostOp::Retrieve),
            "tokens.delete" => Some(HostOp::Delete),
            _ => None,
        }
    }
}

/// Why a host call was refused; the transform's promise rejects with an `Error` carrying
/// `message` and `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    /// The HTTP status the API would have answered (400, 403, 404, …).
    pub status: u16,
    /// Why.
    pub message: String,
}

/// A call from the transform to the vault, answered by whoever runs the transform. Its payload
/// may hold token data: `Debug` leaves it out.
pub struct HostCall {
    /// The operation.
    pub op: HostOp,
    /// Its argument, as the transform passed it.
    pub payload: Value,
    /// Where to send the answer.
    pub reply: oneshot::Sender<Result<Value, HostError>>,
}

impl std::fmt::Debug for HostCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCall")
            .field("op", &self.op)
            .finish_non_exhaustive()
    }
}

/// How a transform ended. Bodies and headers may hold sensitive data: `Debug` shows the kind
/// and status only.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It returned `{body, headers}` (either may be absent).
    Ok {
        /// The returned body (object, string, …), `None` when absent.
        #[serde(default)]
        body: Option<Value>,
        /// The returned headers, `None` when absent.
        #[serde(default)]
        headers: Option<Value>,
    },
    /// It threw one of the HTTP error classes (`BadRequestError`, …).
    Http {
        /// The class's status.
        status: u16,
        /// The class name.
        name: String,
        /// The error's message.
        message: String,
    },
    /// It threw `CustomHttpResponseError({status, headers, body})`.
    Custom {
        /// Status to answer with.
        status: u16,
        /// Headers to answer with.
        #[serde(default)]
        headers: Option<Value>,
        /// Body to answer with.
        #[serde(default)]
        body: Option<Value>,
    },
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Ok { .. } => f.write_str("Outcome::Ok"),
            Outcome::Http { status, name, .. } => write!(f, "Outcome::Http({status} {name})"),
            Outcome::Custom { status, .. } => write!(f, "Outcome::Custom({status})"),
        }
    }
}

/// Why a transform could not produce an [`Outcome`]. Messages never contain stack traces.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    /// It threw something else, or returned something unusable.
    #[error("transform failed: {0}")]
    Crashed(String),
    /// It ran past its time limit.
    #[error("transform exceeded its time limit")]
    TimedOut,
    /// It ran past its memory limit.
    #[error("transform exceeded its memory limit")]
    OutOfMemory,
    /// The engine could not run it (no worker, runtime failure).
    #[error("transform engine error: {0}")]
    Engine(String),
}
