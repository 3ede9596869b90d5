//! # tessera-detokenize
//!
//! Finds detokenization expressions in request bodies and headers and replaces them with token
//! values, safely for the body's type (SUPPLEMENT §6):
//!
//! ```text
//! {{ <token_id> [| filter]* }}          the token's data
//! {{ token: <token_id> [| filter]* }}   the whole token object (so `json: '$.data.x'`)
//! filters: json: '<JSONPath>' | last4 | to_string | to_number | to_boolean | stringify | to_base64
//! ```
//!
//! Work happens in two steps so that every token a request needs is fetched in one storage call:
//! [`Template`]s are prepared from the body and headers (syntax errors surface here, with byte
//! offsets) and report the token ids they reference; the caller fetches those tokens, checks
//! permissions, and hands the values to [`Template::render`]. Nothing here touches storage.

mod body;
mod error;
mod expression;
mod filter;
mod render;

pub use body::{BodyKind, Template};
pub use error::DetokenizeError;
pub use expression::{Binding, Expression};
pub use filter::Filter;
pub use render::{render_header, ResolvedToken, Values};

/// Default cap on distinct tokens in one request.
pub const DEFAULT_MAX_TOKENS: usize = 100;
