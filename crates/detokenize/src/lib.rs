//! # tessera-detokenize
//!
//! Finds detokenization expressions in request bodies and headers and replaces them with token
//! values, safely for the body's type (docs/api.md, "Detokenization expressions"):
//!
//! ```text
//! {{ <token_id> [| filter]* }}          the token's data
//! {{ token: <token_id> [| filter]* }}   the whole token object (so `json: '$.data.x'`)
//! ```
//!
//! The filters are the expression language's (`tessera-expressions`), applied leniently.
//!
//! Work happens in steps so that every token a request needs is fetched in one storage call and
//! nothing is decrypted for a request that will be refused:
//!
//! 1. [`RequestTemplate::prepare`] classifies the content type, parses the body and scans the
//!    header values once (syntax errors surface here, with byte offsets) and lists the token
//!    ids they reference;
//! 2. the caller fetches those tokens (still encrypted) and checks permissions;
//! 3. [`RequestTemplate::check_bound`] refuses a request whose rendering could grow past a
//!    limit, from token *sizes* and the shape of the expressions;
//! 4. the caller decrypts and hands the values to [`RequestTemplate::render`].
//!
//! No answer depends on a token's content: filters that do not apply yield `null`, header
//! values are encoded rather than refused, and regular expressions are refused at parse time.
//! Nothing here touches storage.

mod body;
mod error;
mod expression;
mod render;
mod request;

pub use body::{BodyKind, Template, Unscanned};
pub use error::DetokenizeError;
pub use expression::{Binding, Expression};
pub use render::{ResolvedToken, SourceSize, Values};
pub use request::{Rendered, RequestTemplate};

/// Default cap on distinct tokens in one request.
pub const DEFAULT_MAX_TOKENS: usize = 100;
