//! The filters of the expression language (docs/api.md, "Expressions"): Basis Theory's own
//! (docs/expressions/filters in its documentation) and the standard Liquid filters its
//! examples use, each with the argument forms and defaults documented there.
//!
//! A filter either applies to its input or says why not ([`Unapplicable`]). What happens then
//! depends on whose data it is: in a request's expression (the proxy, `/detokenize`) a key
//! with only `token:use` may *send* a token, never *learn* it, so nothing may depend on the
//! value and the filter renders `null`; in a template evaluated when a token is written the
//! data is the caller's own, and the write is refused with a 400 naming the filter. Arguments
//! are checked when the expression is parsed, whatever the data.
//!
//! Every filter bounds its output from its input's size, so that a request whose rendering
//! could grow past a limit is refused before anything is decrypted.

mod alias;
mod args;
pub(crate) mod encoding;
pub(crate) mod flow;
mod json_path;
mod masks;
mod strings;

pub use flow::{Flow, Unapplicable};
pub use json_path::JsonFilter;

use self::{alias::Alias, encoding::Encoding, masks::Mask, strings::TextFilter};

/// One filter with its arguments.
#[derive(Debug, Clone)]
pub enum Filter {
    /// `json: '<path>'`.
    Json(JsonFilter),
    /// Casts and encodings: `to_string`, `to_number`, `to_boolean`, `stringify`,
    /// `json_stringify`, `to_base64`, `to_base16`, `hmac`.
    Encoding(Encoding),
    /// Masks: `reveal`, `reveal_last`, `last4`, `card_mask`, `card_bin`, `card_exp`.
    Mask(Mask),
    /// Liquid's string and array filters, and `pad_left`, `pad_right`.
    Text(TextFilter),
    /// Random aliases: `alias_preserve_format`, `alias_preserve_length`, `alias_card`.
    Alias(Alias),
}

/// Every filter name, for the message on an unknown one.
pub const NAMES: &str = "json, to_string, to_number, to_boolean, stringify, json_stringify, \
    to_base64, to_base16, hmac, reveal, reveal_last, last4, card_mask, card_bin, card_exp, \
    pad_left, pad_right, slice, split, first, last, upcase, downcase, remove, replace, append, \
    prepend, size, alias_preserve_format, alias_preserve_length, alias_card";

impl Filter {
    /// Parses one filter, `name` or `name: arguments`. The message of an error names the
    /// filter and what is wrong with it.
    pub fn parse(segment: &str) -> Result<Self, String> {
        let trimmed = segment.trim();
        let (name, argument) = match trimmed.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (trimmed, None),
        };
        if name.is_empty() {
            return Err("empty filter after `|`".into());
        }
        if name == "json" {
            let args = args::Args::parse("json", argument)?;
            args.at_most(1)?;
            return JsonFilter::parse(&args.string(0)?).map(Filter::Json);
        }
        Encoding::parse(name, argument)
            .map(|r| r.map(Filter::Encoding))
            .or_else(|| Mask::parse(name, argument).map(|r| r.map(Filter::Mask)))
            .or_else(|| TextFilter::parse(name, argument).map(|r| r.map(Filter::Text)))
            .or_else(|| Alias::parse(name, argument).map(|r| r.map(Filter::Alias)))
            .unwrap_or_else(|| {
                Err(format!(
                    "unknown filter `{}` (known: {NAMES})",
                    crate::text::truncate(name)
                ))
            })
    }

    /// The filter's name in the language.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::Json(_) => "json",
            Filter::Encoding(f) => f.name(),
            Filter::Mask(f) => f.name(),
            Filter::Text(f) => f.name(),
            Filter::Alias(f) => f.name(),
        }
    }

    /// Whether nothing may follow this filter (`json_stringify`, as Basis Theory documents).
    pub(crate) fn must_be_last(&self) -> bool {
        matches!(self, Filter::Encoding(Encoding::JsonStringify))
    }

    /// Applies the filter to `input`, or says why it does not apply.
    pub fn apply(&self, input: Flow) -> Result<Flow, Unapplicable> {
        match self {
            Filter::Json(f) => Ok(Flow::Json(f.apply(&input.into_value()))),
            Filter::Encoding(f) => f.apply(input),
            Filter::Mask(f) => f.apply(input),
            Filter::Text(f) => f.apply(input),
            Filter::Alias(f) => f.apply(input),
        }
    }

    /// Upper bound of the JSON text of this filter's result, given an upper bound `input` of
    /// its input's JSON text. Saturating: a bound that overflows is simply too large.
    pub(crate) fn bound(&self, input: u64) -> u64 {
        match self {
            Filter::Json(f) => f.bound(input),
            Filter::Encoding(f) => f.bound(input),
            Filter::Mask(f) => f.bound(input),
            Filter::Text(f) => f.bound(input),
            Filter::Alias(f) => f.bound(input),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// Every filter's result, over inputs of each JSON kind, fits the bound it gives from the
    /// input's size: the check that refuses a costly rendering before it runs relies on it.
    #[test]
    fn every_result_fits_its_bound() {
        let filters = [
            "json: '$..a'",
            "to_string",
            "to_number",
            "to_boolean",
            "stringify",
            "json_stringify",
            "to_base64",
            "to_base16",
            "hmac: 'k'",
            "reveal: 2",
            "reveal_last: 3",
            "last4",
            "card_mask",
            "card_bin",
            "card_exp: 'MM/YY'",
            "pad_left: 8, '\u{1}'",
            "pad_right: 8, ' '",
            "slice: 1, 3",
            "slice: 0, 9",
            "split: ''",
            "first",
            "last",
            "upcase",
            "downcase",
            "remove: '1'",
            "replace: '1', '\u{2}\u{2}'",
            "append: '\"'",
            "prepend: 'é'",
            "size",
            "alias_preserve_format",
            "alias_preserve_length",
            "alias_card",
        ];
        let inputs = [
            json!("4242424242424242"),
            json!("ß\u{1}\"\\é😀ﬃ"),
            json!(12345),
            json!(-0.5),
            json!("1e-7"),
            json!("-2.2250738585072014e-308"),
            json!(true),
            Value::Null,
            json!([1, "a", {"a": "b"}]),
            json!({"a": {"a": "\u{1}"}, "b": [1, 2]}),
            json!({"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}),
        ];
        for text in filters {
            let filter = Filter::parse(text).expect(text);
            for input in &inputs {
                let size = serde_json::to_vec(input).expect("json").len() as u64;
                let Ok(out) = filter.apply(Flow::Json(input.clone())) else {
                    continue;
                };
                let out_size = serde_json::to_vec(&out.into_value()).expect("json").len() as u64;
                assert!(
                    out_size <= filter.bound(size),
                    "{text} over {input}: {out_size} > {}",
                    filter.bound(size)
                );
            }
        }
    }
}
