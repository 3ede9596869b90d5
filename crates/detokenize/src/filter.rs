//! Filters applied to a token value inside an expression.
//!
//! No filter can fail on a value (docs/api.md, "Detokenization expressions"): a key with only
//! `token:use` may *send* a token to the proxy's destination, never *learn* it, so the
//! gateway's own answer (status, body) must not depend on the token's content. A filter that
//! does not apply to the value it receives yields `null`, and a `json:` path that matches nothing
//! yields `null` (several matches: the array of them). Regular-expression functions, whose
//! running time depends on the value, are refused when the expression is parsed.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use serde_json::{Number, Value};
use serde_json_path::JsonPath;

use crate::error::{truncate, DetokenizeError};

/// How deep a stored value can nest: token data is parsed by `serde_json`, which refuses more
/// than 128 levels, so a descendant segment (`..`) visits every node at most 129 times over.
const MAX_DEPTH: u64 = 129;

/// One filter of the grammar.
#[derive(Debug, Clone)]
pub enum Filter {
    /// `json: '<path>'`: the RFC 9535 JSONPath's matches: `null` for none, the value for one,
    /// the array of them for several.
    Json {
        /// The parsed path.
        path: Box<JsonPath>,
        /// Upper bound of how much larger the result can be than the input (see
        /// [`path_growth`]).
        growth: u64,
    },
    /// `last4`: the last four characters of a string (or number); `null` for anything else.
    Last4,
    /// `to_string`: strings stay, anything else becomes its compact JSON text.
    ToString,
    /// `to_number`: numbers stay, numeric strings become numbers; `null` otherwise.
    ToNumber,
    /// `to_boolean`: booleans stay, `"true"`/`"false"` become booleans; `null` otherwise.
    ToBoolean,
    /// `stringify`: the value's JSON text, as a string.
    Stringify,
    /// `to_base64`: base64 of a string's UTF-8 (or of other values' JSON text).
    ToBase64,
}

impl Filter {
    /// The filter's name in the grammar.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::Json { .. } => "json",
            Filter::Last4 => "last4",
            Filter::ToString => "to_string",
            Filter::ToNumber => "to_number",
            Filter::ToBoolean => "to_boolean",
            Filter::Stringify => "stringify",
            Filter::ToBase64 => "to_base64",
        }
    }

    /// Parses one `| …` segment; `offset` is its byte offset for errors.
    pub(crate) fn parse(
        segment: &str,
        offset: usize,
        location: &str,
    ) -> Result<Self, DetokenizeError> {
        let err = |at: usize, message: String| DetokenizeError::Syntax {
            offset: at,
            location: location.to_string(),
            message,
        };
        let lead = segment.len() - segment.trim_start().len();
        let at = offset + lead;
        let trimmed = segment.trim();
        let (name, argument) = match trimmed.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (trimmed, None),
        };
        let simple = |f: Filter| match argument {
            None => Ok(f),
            Some(_) => Err(err(at, format!("filter `{name}` takes no argument"))),
        };
        match name {
            "json" => {
                let raw = argument.ok_or_else(|| err(at, "filter `json` needs a quoted JSONPath, e.g. json: '$.number'".into()))?;
                let quoted = raw.len() >= 2
                    && ((raw.starts_with('\'') && raw.ends_with('\'')) || (raw.starts_with('"') && raw.ends_with('"')));
                if !quoted {
                    return Err(err(at, "the JSONPath must be quoted, e.g. json: '$.number'".into()));
                }
                let path = &raw[1..raw.len() - 1];
                if let Some(function) = regex_function(path) {
                    return Err(err(
                        at,
                        format!("the JSONPath function `{function}` is not allowed: regular expressions over token data are refused"),
                    ));
                }
                let parsed = JsonPath::parse(path)
                    .map_err(|e| err(at, format!("invalid JSONPath `{}`: {e}", truncate(path))))?;
                Ok(Filter::Json {
                    path: Box::new(parsed),
                    growth: path_growth(path),
                })
            }
            "last4" => simple(Filter::Last4),
            "to_string" => simple(Filter::ToString),
            "to_number" => simple(Filter::ToNumber),
            "to_boolean" => simple(Filter::ToBoolean),
            "stringify" => simple(Filter::Stringify),
            "to_base64" => simple(Filter::ToBase64),
            "" => Err(err(at, "empty filter after `|`".into())),
            other => Err(err(
                at,
                format!(
                    "unknown filter `{}` (json, last4, to_string, to_number, to_boolean, stringify, to_base64)",
                    truncate(other)
                ),
            )),
        }
    }

    /// Applies the filter. Never fails: what does not apply yields `null`.
    pub fn apply(&self, value: Value) -> Value {
        match self {
            Filter::Json { path, .. } => {
                let mut nodes = path.query(&value).all();
                match nodes.len() {
                    0 => Value::Null,
                    1 => nodes.pop().cloned().unwrap_or(Value::Null),
                    _ => Value::Array(nodes.into_iter().cloned().collect()),
                }
            }
            Filter::Last4 => match &value {
                Value::String(s) => Value::String(last_chars(s, 4)),
                Value::Number(n) => Value::String(last_chars(&n.to_string(), 4)),
                _ => Value::Null,
            },
            Filter::ToString => Value::String(text_of(&value)),
            Filter::ToNumber => match &value {
                Value::Number(_) => value,
                Value::String(s) => parse_number(s.trim()).unwrap_or(Value::Null),
                _ => Value::Null,
            },
            Filter::ToBoolean => match &value {
                Value::Bool(_) => value,
                Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Value::Bool(true),
                Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Value::Bool(false),
                _ => Value::Null,
            },
            Filter::Stringify => Value::String(value.to_string()),
            Filter::ToBase64 => Value::String(STANDARD.encode(text_of(&value))),
        }
    }

    /// Upper bound of the JSON text of this filter's result, given an upper bound `input` of
    /// its input's JSON text. Saturating: a bound that overflows is simply too large.
    pub(crate) fn bound(&self, input: u64) -> u64 {
        match self {
            // Several matches are an array: the matches plus a comma or bracket each.
            Filter::Json { growth, .. } => growth
                .saturating_mul(input)
                .saturating_mul(2)
                .saturating_add(4),
            // Four characters of at most 4 bytes, escaped at most 6 bytes each, quoted.
            Filter::Last4 => 4 * 6 + 2,
            // A string's text is its content; another value's is its JSON, escaped in a string.
            Filter::ToString | Filter::Stringify => input.saturating_mul(2).saturating_add(2),
            Filter::ToNumber => input.max(4),
            Filter::ToBoolean => 5,
            Filter::ToBase64 => input.saturating_mul(2).saturating_add(6),
        }
    }
}

/// The regular-expression function (`match`, `search`) a JSONPath calls, outside its string
/// literals, if any.
fn regex_function(path: &str) -> Option<&'static str> {
    let bytes = path.as_bytes();
    for i in Unquoted::new(path) {
        let boundary = i == 0 || !is_name_byte(bytes[i - 1]);
        if boundary {
            for name in ["match", "search"] {
                if path[i..].starts_with(name)
                    && path[i + name.len()..].trim_start().starts_with('(')
                {
                    return Some(name);
                }
            }
        }
    }
    None
}

/// The positions of a JSONPath's bytes outside its string literals (the quotes excluded), in
/// order: what the scans of the path's text look at, so that a name or a `..` inside a
/// literal counts for nothing.
struct Unquoted<'a> {
    bytes: &'a [u8],
    i: usize,
    quote: Option<u8>,
}

impl<'a> Unquoted<'a> {
    fn new(path: &'a str) -> Self {
        Self {
            bytes: path.as_bytes(),
            i: 0,
            quote: None,
        }
    }
}

impl Iterator for Unquoted<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while let Some(&b) = self.bytes.get(self.i) {
            let i = self.i;
            self.i += 1;
            match self.quote {
                Some(_) if b == b'\\' => self.i += 1,
                Some(q) if b == q => self.quote = None,
                Some(_) => {}
                None if b == b'\'' || b == b'"' => self.quote = Some(b),
                None => return Some(i),
            }
        }
        None
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A conservative bound, read from the path's text, of how much larger than its input a
/// JSONPath's result can be: [`MAX_DEPTH`] per descendant segment (`..`), times the number of
/// selectors of each bracketed segment (`[a,b]` may select a value twice); names, indices,
/// wildcards, slices and filters select parts of their input. Commas inside filters count too,
/// which only over-estimates.
fn path_growth(path: &str) -> u64 {
    let bytes = path.as_bytes();
    let (mut depth, mut selectors, mut growth) = (0u32, 1u64, 1u64);
    let mut scan = Unquoted::new(path);
    while let Some(i) = scan.next() {
        match bytes[i] {
            b'.' if depth == 0 && bytes.get(i + 1) == Some(&b'.') => {
                growth = growth.saturating_mul(MAX_DEPTH);
                // The second dot of `..`.
                scan.next();
            }
            b'[' => {
                depth += 1;
                if depth == 1 {
                    selectors = 1;
                }
            }
            b',' if depth == 1 => selectors += 1,
            b']' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    growth = growth.saturating_mul(selectors);
                }
            }
            _ => {}
        }
    }
    growth
}

/// Strings as they are; anything else as compact JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn last_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

fn parse_number(s: &str) -> Option<Value> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::Number(i.into()));
    }
    if let Ok(u) = s.parse::<u64>() {
        return Some(Value::Number(u.into()));
    }
    s.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter(s: &str) -> Filter {
        Filter::parse(s, 0, "test").expect("filter")
    }

    #[test]
    fn filters_transform_values() {
        let card = json!({"number": "4242424242424242", "exp": 12});
        let cases = [
            ("json: '$.number'", card.clone(), json!("4242424242424242")),
            ("last4", json!("4242424242424242"), json!("4242")),
            ("last4", json!(12345), json!("2345")),
            ("last4", json!("ab"), json!("ab")),
            ("to_string", json!(12), json!("12")),
            ("to_string", json!({"a": 1}), json!("{\"a\":1}")),
            ("to_number", json!(" 42 "), json!(42)),
            ("to_number", json!("4.5"), json!(4.5)),
            ("to_boolean", json!("TRUE"), json!(true)),
            ("stringify", json!("a\"b"), json!("\"a\\\"b\"")),
            ("to_base64", json!("hi"), json!("aGk=")),
        ];
        for (f, input, expected) in cases {
            assert_eq!(filter(f).apply(input), expected, "{f}");
        }
    }

    /// Pinned rule (docs/api.md, "Detokenization expressions"): what does not apply renders `null`,
    /// several matches render as an array; nothing fails on a value.
    #[test]
    fn what_does_not_apply_is_null_and_several_matches_are_an_array() {
        let card = json!({"number": "4242424242424242", "cvc": "123"});
        let cases = [
            ("json: '$.missing'", card.clone(), Value::Null),
            ("json: '$.number'", json!("not an object"), Value::Null),
            ("json: '$.*'", json!({"a": 1, "b": 2}), json!([1, 2])),
            ("json: '$[?@ == \"123\"]'", card.clone(), json!("123")),
            ("json: '$[?@ == \"999\"]'", card.clone(), Value::Null),
            ("last4", card.clone(), Value::Null),
            ("last4", json!(true), Value::Null),
            ("to_number", json!("4242abc"), Value::Null),
            ("to_number", card.clone(), Value::Null),
            ("to_boolean", json!("yes"), Value::Null),
        ];
        for (f, input, expected) in cases {
            assert_eq!(filter(f).apply(input), expected, "{f}");
        }
    }

    #[test]
    fn regular_expression_functions_are_refused_at_parse_time() {
        for bad in [
            "json: '$[?search(@.number, \"^41\")]'",
            "json: '$[?match(@.number, \"4.*\")]'",
            "json: \"$[?search (@.n, '1')]\"",
            "json: '$[?count(@.*) > 0 && search(@.a, \"x\")]'",
        ] {
            let e = Filter::parse(bad, 0, "t").expect_err(bad);
            assert!(e.to_string().contains("not allowed"), "{e}");
        }
        // Names that merely contain the words, or quote them, are fine.
        for ok in [
            "json: '$.match'",
            "json: '$.research'",
            "json: '$[\"search(\"]'",
            "json: '$[?@.matches == 1]'",
        ] {
            assert!(Filter::parse(ok, 0, "t").is_ok(), "{ok}");
        }
    }

    #[test]
    fn path_growth_counts_descendants_and_duplicate_selectors() {
        assert_eq!(path_growth("$.number"), 1);
        assert_eq!(path_growth("$['a']['b'][0]"), 1);
        assert_eq!(path_growth("$.*[*]"), 1);
        assert_eq!(path_growth("$['a','a','a']"), 3);
        assert_eq!(path_growth("$[*,*][*,*]"), 4);
        assert_eq!(path_growth("$..x"), MAX_DEPTH);
        assert_eq!(path_growth("$['..', ',']"), 2, "quoted text does not count");
        assert_eq!(path_growth(&"[*,*]".repeat(80)), u64::MAX, "saturates");
    }

    #[test]
    fn parse_errors() {
        for bad in ["json", "json: $.a", "last4: 2", "shout", ""] {
            assert!(Filter::parse(bad, 0, "t").is_err(), "{bad}");
        }
    }
}
