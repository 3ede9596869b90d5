//! What goes into a transform and what comes out. Plain data (serde), so the same invocation
//! can run in this process or in a sandbox process.

use serde::{Deserialize, Serialize};

/// A `req.svc` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostError {
    /// The HTTP status the API would have answered (400, 403, 404, …).
    pub status: u16,
    /// Why.
    pub message: String,
}

/// The body a transform receives in `req.args.body`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Body {
    /// A JSON body, as its text: the engine parses it (once); text that is not JSON arrives as
    /// a string.
    Json(String),
    /// A form body's decoded pairs: an object (repeated names as arrays).
    Form(Vec<(String, String)>),
    /// Any other body, as text.
    Text(String),
}

/// `req.args` (without `svc`), as the gateway builds it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Args {
    /// The body.
    pub body: Body,
    /// Headers, names lowercased, repeated values joined with `, `.
    pub headers: Vec<(String, String)>,
    /// Request transforms: the method.
    pub method: Option<String>,
    /// Request transforms: the path after `/proxy`.
    pub path: Option<String>,
    /// Request transforms: the query with its `?`, or `""`.
    pub query: Option<String>,
    /// Response transforms: the destination's status.
    pub status: Option<u16>,
}

/// Everything one invocation is given. It holds request data and the proxy's configuration:
/// `Debug` shows none of it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// `req.args`.
    pub args: Args,
    /// `req.configuration`.
    pub configuration: Vec<(String, String)>,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Body::Json(_) => "Body::Json",
            Body::Form(_) => "Body::Form",
            Body::Text(_) => "Body::Text",
        })
    }
}

impl std::fmt::Debug for Args {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Args")
            .field("body", &self.body)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input").finish_non_exhaustive()
    }
}

/// How a transform ended. Bodies and headers may hold sensitive data: `Debug` shows the kind
/// and status only.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// It returned `{body, headers}`.
    Ok {
        /// The returned body, already encoded (a string as it was; an object as JSON, or as a
        /// form for a form message); `None` when not returned.
        body: Option<String>,
        /// The returned headers as `(name, value)` pairs; `None` when not returned.
        headers: Option<Vec<(String, String)>>,
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
        /// Status to answer with (validated by the caller).
        status: u32,
        /// Headers to answer with.
        headers: Option<Vec<(String, String)>>,
        /// Body to answer with (a string as it was, anything else as JSON).
        body: String,
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
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
    /// The engine could not run it (no runtime, a sandbox process that died, …).
    #[error("transform engine error: {0}")]
    Engine(String),
    /// It never started: no sandbox slot came free within the queue timeout (process
    /// isolation). Not the transform's fault: the time it waited is not its running time, and
    /// the proxy is not quarantined for it.
    #[error("no transform sandbox was free in time; retry later")]
    Busy,
}
