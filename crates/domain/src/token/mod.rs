//! Tokens: a sensitive value (held encrypted), its type, container and metadata.
//!
//! One concern per file: the kinds of token (`token_type`), what a caller sends to create a
//! token (`new`) or to change one (`patch`), the per-type shape its data must have (`data`),
//! what its fingerprint is computed over (`fingerprint`), what a `mask` transform shows
//! (`mask`), and the token as read back and its JSON shape, as every answer shows it
//! (`json`).

mod card_summary;
mod cvc;
mod data;
mod fingerprint;
mod id_choice;
mod indexing;
mod json;
mod mask;
mod new;
mod patch;
mod token_type;

pub use card_summary::{brand as card_brand, CardSummary};
pub use cvc::{
    holds_cvc, remove_cvc, without_cvc, CvcRetention, DEFAULT_CVC_RETENTION, MAX_CVC_RETENTION,
};
// The audit trail's encoding test checks its canonical JSON against this one.
pub use fingerprint::{canonical_json, fingerprint_input};
pub use id_choice::{IdChoice, ALIAS_DRAWS};
pub use indexing::{
    effective_fingerprint_expression, effective_search_indexes, reads_metadata, Indexing,
    SearchHash, MAX_SEARCH_INDEXES,
};
pub use json::{Token, TokenView};
pub use mask::{
    default_mask, masked, merge_patch, open_mask, render_mask, reseal_mask, seal_mask,
    validate_mask, whole_fields, MAX_MASK_BYTES, MAX_MASK_DEPTH, MAX_MASK_TEMPLATES,
};
pub use new::{NewToken, ValidToken};
pub use patch::{TokenChanges, TokenPatch};
pub use token_type::TokenType;
