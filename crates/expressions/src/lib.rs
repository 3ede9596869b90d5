//! # tessera-expressions
//!
//! The one template language of Tessera (docs/api.md, "Expressions"), Basis Theory's: Liquid
//! objects (`{{ … }}`) with filters. It serves two places:
//!
//! - expressions in requests (the proxy, `/detokenize`), where a token id binds its data;
//!   their scanning and substitution live in `tessera-detokenize`, which renders each one
//!   with a [`Chain`] *leniently* (a filter that does not apply yields `null`: no answer may
//!   depend on a token's value);
//! - [`Template`]s evaluated when a token is written (alias ids; search indexes, fingerprint
//!   expressions and masks), which bind `data` (and `metadata`) with `.key` and `[i]` paths
//!   and render *strictly* (a filter that does not apply is the caller's 400).
//!
//! No filter runs a regular expression over data, every filter bounds its output from its
//! input's size before anything is rendered, and Liquid tags (`{% … %}`) are refused.

mod chain;
mod error;
pub mod filter;
mod template;
mod text;

pub use chain::Chain;
pub use chain::MAX_FILTERS;
pub use error::{SyntaxError, TemplateError};
pub use filter::{Filter, Flow, Unapplicable};
pub use template::{Scope, Template, MAX_OBJECTS, MAX_RENDERED, MAX_TEMPLATE_BYTES};
pub use text::truncate;
