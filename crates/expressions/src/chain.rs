//! A chain of filters (`| a | b: 1`), parsed once, applied left to right.

use serde_json::Value;

use crate::{
    error::SyntaxError,
    filter::{Filter, Flow, Unapplicable},
};

/// Most filters one expression or template object may chain: each one walks its input, so
/// a longer chain would multiply the work of a rendering whose size is bounded.
pub const MAX_FILTERS: usize = 32;

/// The filters after an expression's head, in order.
#[derive(Debug, Clone, Default)]
pub struct Chain(Vec<Filter>);

impl Chain {
    /// Parses the `| …` segments of `text` (empty, or starting with `|`), splitting on `|`
    /// outside quotes. An error carries the byte offset in `text` of the filter at fault.
    pub fn parse(text: &str) -> Result<Self, SyntaxError> {
        let mut filters: Vec<Filter> = Vec::new();
        if !text.is_empty() && !text.starts_with('|') {
            return Err(SyntaxError::at(0, "expected `|` before a filter"));
        }
        for (offset, segment) in split_pipes(text) {
            let at = offset + (segment.len() - segment.trim_start().len());
            if let Some(previous) = filters.last().filter(|f| f.must_be_last()) {
                return Err(SyntaxError::at(
                    at,
                    format!(
                        "filter `{}` must be the last of its expression",
                        previous.name()
                    ),
                ));
            }
            if filters.len() == MAX_FILTERS {
                return Err(SyntaxError::at(
                    at,
                    format!("an expression chains at most {MAX_FILTERS} filters"),
                ));
            }
            filters.push(Filter::parse(segment).map_err(|m| SyntaxError::at(at, m))?);
        }
        Ok(Self(filters))
    }

    /// The filters.
    pub fn filters(&self) -> &[Filter] {
        &self.0
    }

    /// `value` through every filter; a filter that does not apply yields `null`, so the result
    /// never fails on a value (expressions in requests).
    pub fn render_lenient(&self, value: Value) -> Value {
        self.0
            .iter()
            .fold(Flow::Json(value), |flow, f| {
                f.apply(flow).unwrap_or(Flow::Json(Value::Null))
            })
            .into_value()
    }

    /// `value` through every filter, or the first filter that does not apply (templates over
    /// the caller's own data).
    pub fn render_strict(&self, value: Value) -> Result<Value, Unapplicable> {
        self.0
            .iter()
            .try_fold(Flow::Json(value), |flow, f| f.apply(flow))
            .map(Flow::into_value)
    }

    /// Upper bound of what rendering holds at its largest, from an upper bound of the input's
    /// JSON text: the input itself (each rendering starts from a copy), every filter's result
    /// on the way, and the last one. A filter that reduces (`size`, `last4`) does not hide
    /// what an earlier one built, so this bounds the memory and time of the rendering as well
    /// as its result.
    pub fn bound(&self, input: u64) -> u64 {
        self.0
            .iter()
            .fold((input, input), |(at, peak), f| {
                let next = f.bound(at);
                (next, peak.max(next))
            })
            .1
    }
}

/// Splits what follows an expression's head into its `| filter` segments, each with its byte
/// offset in `text`; `text` starts with `|` (or is empty). `|` inside quotes does not split.
fn split_pipes(text: &str) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let Some(rest) = text.strip_prefix('|') else {
        return parts;
    };
    let mut quote: Option<char> = None;
    let mut start = 1;
    for (i, c) in rest.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '|' => {
                parts.push((start, &text[start..=i]));
                start = i + 2;
            }
            None => {}
        }
    }
    parts.push((start, &text[start..]));
    parts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn chains_apply_in_order_and_name_their_offsets() {
        let chain = Chain::parse("| to_string | slice: -2, 2").expect("chain");
        assert_eq!(chain.render_strict(json!(2025)), Ok(json!("25")));
        let e = Chain::parse("| last4 | shout").expect_err("unknown");
        assert_eq!(e.offset, 10);
        let e = Chain::parse("| json_stringify | upcase").expect_err("not last");
        assert!(e.to_string().contains("must be the last"), "{e}");
        assert!(Chain::parse("| json: '$[\"a|b\"]'").is_ok(), "quoted pipe");
        assert!(Chain::parse("|").is_err(), "empty filter");
        assert!(Chain::parse("").expect("none").filters().is_empty());
        let most = "| upcase ".repeat(MAX_FILTERS);
        assert_eq!(
            Chain::parse(&most).expect("at the cap").filters().len(),
            MAX_FILTERS
        );
        let e = Chain::parse(&format!("{most}| upcase")).expect_err("over the cap");
        assert!(e.to_string().contains("at most 32 filters"), "{e}");
    }

    #[test]
    fn the_bound_holds_the_largest_step_not_only_the_last() {
        // `pad_left` builds 10,000 characters that `size` then reduces to a number: rendering
        // still holds them, so the bound counts them.
        let chain = Chain::parse("| pad_left: 10000, 'x' | size").expect("chain");
        assert!(chain.bound(10) >= 10_000, "{}", chain.bound(10));
        assert!(Chain::parse("").expect("none").bound(7) == 7);
    }

    #[test]
    fn lenient_renders_null_where_strict_refuses() {
        let chain = Chain::parse("| card_exp: 'MM' | append: 'x'").expect("chain");
        assert_eq!(chain.render_lenient(json!("not a card")), json!("x"));
        let e = chain
            .render_strict(json!("not a card"))
            .expect_err("strict");
        assert_eq!(e.filter, "card_exp");
        let hex = Chain::parse("| hmac: 'sha-256', 'secretKeyValue' | to_base16").expect("chain");
        assert_eq!(hex.render_lenient(Value::Null), Value::Null);
    }
}
