//! Evaluating expressions against fetched token values and splicing results into text.

use std::collections::HashMap;

use percent_encoding::{utf8_percent_encode, CONTROLS};
use serde_json::Value;
use tessera_domain::{Secret, TokenId};

use crate::{
    error::DetokenizeError,
    expression::{Binding, Expression},
};

/// A fetched token, decoded once into what rendering needs. Both parts are [`Secret`]s: never
/// printed, wiped when dropped.
#[derive(Debug, Default)]
pub struct ResolvedToken {
    /// The token's data.
    pub data: Secret<Value>,
    /// The whole token object (`{id, tenant_id, type, data, metadata, containers, …}`) for
    /// `token:` expressions; built only for the tokens such an expression names
    /// ([`crate::RequestTemplate::needs_object`]).
    pub object: Option<Secret<Value>>,
}

/// Fetched tokens by id.
pub type Values = HashMap<TokenId, ResolvedToken, foldhash::fast::RandomState>;

/// What the size bound of a rendering may know about a token before it is decrypted: the
/// length of the JSON text of its data and of its whole object. Never the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceSize {
    /// Upper bound of the data's JSON text, in bytes.
    pub data: u64,
    /// Upper bound of the token object's JSON text, in bytes.
    pub object: u64,
}

impl SourceSize {
    /// Sizes are rounded up to this granularity before they are used, so that a bound which
    /// refuses a request reveals at most a token's size in KiB (a caller can vary how often it
    /// references a token until the bound refuses).
    pub const GRANULARITY: u64 = 1024;

    /// Sizes from exact byte counts, rounded up to [`SourceSize::GRANULARITY`].
    pub fn rounded(data: u64, object: u64) -> Self {
        let round = |n: u64| {
            n.div_ceil(Self::GRANULARITY)
                .max(1)
                .saturating_mul(Self::GRANULARITY)
        };
        Self {
            data: round(data),
            object: round(object),
        }
    }
}

/// Where an expression's result lands, and so how much larger than its JSON text it can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    /// A whole JSON string replaced by the value: its JSON text.
    JsonValue,
    /// Text inside a JSON string: escaping can double it.
    JsonText,
    /// A form value: percent-encoding can triple it.
    Form,
    /// A text body: as is.
    Text,
    /// A header value: percent-encoding can triple it.
    Header,
}

impl Context {
    fn factor(self) -> u64 {
        match self {
            Context::JsonValue | Context::Text => 1,
            Context::JsonText => 2,
            Context::Form | Context::Header => 3,
        }
    }
}

impl Expression {
    /// Upper bound, in bytes, of what this expression renders to in `context`, from the size
    /// of its token alone.
    pub(crate) fn bound(&self, size: SourceSize, context: Context) -> u64 {
        let source = match self.binding {
            Binding::Data => size.data,
            Binding::Token => size.object,
        };
        self.chain.bound(source).saturating_mul(context.factor())
    }
}

/// The value of one expression. Only an unknown token fails; filters never do: one that does
/// not apply yields `null` (no answer may depend on a token's value).
pub(crate) fn evaluate(expr: &Expression, values: &Values) -> Result<Value, DetokenizeError> {
    let unknown = || DetokenizeError::UnknownToken(expr.token_id.to_string());
    let token = values.get(&expr.token_id).ok_or_else(unknown)?;
    let value = match expr.binding {
        Binding::Data => token.data.expose().clone(),
        Binding::Token => token.object.as_ref().ok_or_else(unknown)?.expose().clone(),
    };
    Ok(expr.chain.render_lenient(value))
}

/// Strings as they are; anything else as compact JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `text` with every expression replaced by its value as text (strings raw, anything else as
/// compact JSON), each passed through `encode`. Substituted text is never scanned again, so a
/// value holding `{{…}}` arrives literally.
pub(crate) fn splice(
    text: &str,
    exprs: &[Expression],
    values: &Values,
    encode: impl Fn(&str, &mut String),
) -> Result<String, DetokenizeError> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for expr in exprs {
        out.push_str(&text[at..expr.start]);
        encode(&text_of(&evaluate(expr, values)?), &mut out);
        at = expr.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Appends `text` as it is.
pub(crate) fn raw(text: &str, out: &mut String) {
    out.push_str(text);
}

/// Appends `text` for a header value: every byte outside visible ASCII and space (controls,
/// CR, LF, NUL, tab, and the UTF-8 bytes of non-ASCII characters) percent-encoded, as RFC 8187
/// does for non-ASCII (`é` → `%C3%A9`, CR LF → `%0D%0A`). Whatever a token holds, the header
/// stays a valid single line, so a header detokenization never fails because of a value.
pub(crate) fn header_safe(text: &str, out: &mut String) {
    out.extend(utf8_percent_encode(text, CONTROLS));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_text_is_percent_encoded_outside_visible_ascii() {
        let mut out = String::new();
        header_safe("Bearer é\r\nX-Evil: 1\0\t%", &mut out);
        assert_eq!(out, "Bearer %C3%A9%0D%0AX-Evil: 1%00%09%");
    }

    #[test]
    fn sizes_round_up_to_whole_kibibytes() {
        assert_eq!(
            SourceSize::rounded(0, 1),
            SourceSize {
                data: 1024,
                object: 1024
            }
        );
        assert_eq!(SourceSize::rounded(1025, 2048).data, 2048);
        assert_eq!(SourceSize::rounded(1025, 2048).object, 2048);
    }
}
