//! The stages of a request, one file and one function each, over the
//! [`crate::context::RequestContext`]; `lib.rs` calls them in order (its documentation draws the
//! path). Each takes the context and what the stage before it produced, and returns what the
//! next one needs.

pub(crate) mod authenticate;
pub(crate) mod destination;
pub(crate) mod detokenize;
pub(crate) mod forward;
pub(crate) mod not_quarantined;
pub(crate) mod read_body;
pub(crate) mod respond;
pub(crate) mod select_proxy;
pub(crate) mod transform_request;
pub(crate) mod transform_response;
pub(crate) mod within_rate_limit;

pub(crate) use crate::handoff::{Answer, Halt, Outgoing};
