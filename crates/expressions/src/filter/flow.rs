//! What passes from one filter to the next ([`Flow`]), why a filter does not apply to it
//! ([`Unapplicable`]), and the bounds every family computes its output's size with.

use serde_json::Value;

/// What flows from one filter to the next: a JSON value, or the bytes `hmac` produces, which
/// `to_base16` and `to_base64` encode. Bytes that reach the end of an expression, or a filter
/// that reads text, are their upper-case hex text.
#[derive(Debug, Clone, PartialEq)]
pub enum Flow {
    /// A JSON value.
    Json(Value),
    /// Raw bytes.
    Bytes(Vec<u8>),
}

impl Flow {
    /// The JSON value this renders as.
    pub fn into_value(self) -> Value {
        match self {
            Flow::Json(value) => value,
            Flow::Bytes(bytes) => Value::String(hex_upper(&bytes)),
        }
    }

    /// The text a text filter reads: a string as it is, a number as written, bytes as their
    /// hex; `None` for anything else.
    pub(crate) fn text(&self) -> Option<String> {
        match self {
            Flow::Json(Value::String(s)) => Some(s.clone()),
            Flow::Json(Value::Number(n)) => Some(n.to_string()),
            Flow::Bytes(bytes) => Some(hex_upper(bytes)),
            Flow::Json(_) => None,
        }
    }
}

impl From<Value> for Flow {
    fn from(value: Value) -> Self {
        Flow::Json(value)
    }
}

impl From<String> for Flow {
    fn from(text: String) -> Self {
        Flow::Json(Value::String(text))
    }
}

/// Why a filter did not apply to its input. The reason names what the filter expects, never
/// the value it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("filter `{filter}` does not apply: {reason}")]
pub struct Unapplicable {
    /// The filter's name.
    pub filter: &'static str,
    /// What it expects.
    pub reason: &'static str,
}

/// Bytes of JSON text one character can take at most: four of UTF-8, escaped as two `\uXXXX`
/// (12) in the worst case of a control or surrogate-pair character.
pub(crate) const MAX_CHAR_JSON: u64 = 12;

/// The bound of a result of at most `chars` characters, quoted.
pub(crate) fn chars_bound(chars: u64) -> u64 {
    chars.saturating_mul(MAX_CHAR_JSON).saturating_add(2)
}

/// A filter whose input was none it reads.
pub(crate) fn unapplicable(filter: &'static str, reason: &'static str) -> Unapplicable {
    Unapplicable { filter, reason }
}

/// The text `flow` holds for `filter`, or why there is none.
pub(crate) fn text_for(filter: &'static str, flow: &Flow) -> Result<String, Unapplicable> {
    flow.text()
        .ok_or_else(|| unapplicable(filter, "expects a string or a number"))
}

/// Upper-case hex, as Basis Theory's `to_base16` writes it.
pub(crate) fn hex_upper(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}
