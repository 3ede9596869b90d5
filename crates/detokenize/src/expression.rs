//! Expressions in requests (the proxy, `/detokenize`): scanning text for `{{ … }}` and reading
//! what is inside (docs/api.md, "Expressions").
//!
//! ```text
//! {{ <token_id> [| filter]* }}          the token's data
//! {{ token: <token_id> [| filter]* }}   the whole token object (so `json: '$.data.x'`)
//! ```
//!
//! The token id is the text up to the first `|` or `}}`, trimmed: a UUID, or any id a caller
//! chose (ids hold neither `|` nor braces). Liquid tags (`{% … %}`) are refused.

use tessera_domain::{ids::TokenIdError, TokenId};
use tessera_expressions::{truncate, Chain};

use crate::error::DetokenizeError;

/// What an expression starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// `{{ <id> }}`: the token's data.
    Data,
    /// `{{ token: <id> }}`: the whole token object (`id`, `type`, `data`, `metadata`, …).
    Token,
}

/// One parsed expression and where it sits in its string.
#[derive(Debug, Clone)]
pub struct Expression {
    /// Byte offset of the opening `{{`.
    pub start: usize,
    /// Byte offset just past the closing `}}`.
    pub end: usize,
    /// Data or whole token.
    pub binding: Binding,
    /// The token referenced.
    pub token_id: TokenId,
    /// Filters, applied left to right.
    pub chain: Chain,
}

impl Expression {
    /// Finds every expression in `text`; see [`scan`].
    pub fn scan(text: &str, location: &str) -> Result<Vec<Expression>, DetokenizeError> {
        scan(text, location)
    }
}

/// Finds every expression in `text`, in order. `location` names the string in error messages.
///
/// The head ends at the first `|` or `}}`; after it, the closing `}}` is searched outside
/// single- and double-quoted sections, so a filter's argument may contain `}}`.
pub(crate) fn scan(text: &str, location: &str) -> Result<Vec<Expression>, DetokenizeError> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(rel) = memchr::memmem::find(&bytes[from..], b"{") {
        let start = from + rel;
        match bytes.get(start + 1) {
            Some(b'{') => {}
            Some(b'%') if is_tag(&text[start..]) => {
                return Err(syntax(
                    start,
                    location,
                    "Liquid tags ({% … %}) are not supported; use {{ … }} expressions",
                ))
            }
            _ => {
                from = start + 1;
                continue;
            }
        }
        let expression = one(text, start, location)?;
        from = expression.end;
        found.push(expression);
    }
    Ok(found)
}

/// Whether `text`, which starts with `{%`, opens a Liquid tag: a name after optional white
/// space (or `-`), and a closing `%}` later.
fn is_tag(text: &str) -> bool {
    let inner = text[2..].trim_start_matches(|c: char| c == '-' || c.is_whitespace());
    inner.starts_with(|c: char| c.is_ascii_alphabetic()) && inner.contains("%}")
}

/// The expression whose `{{` is at `start`.
fn one(text: &str, start: usize, location: &str) -> Result<Expression, DetokenizeError> {
    let bytes = text.as_bytes();
    let inner = start + 2;
    let head_end = (inner..bytes.len())
        .find(|&j| bytes[j] == b'|' || (bytes[j] == b'}' && bytes.get(j + 1) == Some(&b'}')))
        .ok_or_else(|| syntax(start, location, "unterminated expression: missing `}}`"))?;
    let close = if bytes[head_end] == b'|' {
        closing(bytes, head_end)
            .ok_or_else(|| syntax(start, location, "unterminated expression: missing `}}`"))?
    } else {
        head_end
    };
    let (binding, token_id) = head(&text[inner..head_end], inner, location)?;
    let chain = Chain::parse(&text[head_end..close])
        .map_err(|e| syntax(head_end + e.offset, location, e.message))?;
    Ok(Expression {
        start,
        end: close + 2,
        binding,
        token_id,
        chain,
    })
}

/// The offset of the `}}` that closes an expression whose filters start at `from`, outside
/// quotes.
fn closing(bytes: &[u8], from: usize) -> Option<usize> {
    let mut quote: Option<u8> = None;
    let mut j = from;
    while j + 1 < bytes.len() {
        let b = bytes[j];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b'}' && bytes[j + 1] == b'}' => return Some(j),
            None => {}
        }
        j += 1;
    }
    None
}

/// A syntax error at `offset` of the string at `location`.
fn syntax(offset: usize, location: &str, message: impl Into<String>) -> DetokenizeError {
    DetokenizeError::Syntax {
        offset,
        location: location.to_string(),
        message: message.into(),
    }
}

/// Offset of the first non-whitespace character of `s` (or its length).
fn leading_ws(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// Reads an expression's head (`<id>` or `token: <id>`), which starts at byte `base`.
fn head(head: &str, base: usize, location: &str) -> Result<(Binding, TokenId), DetokenizeError> {
    let trimmed = head.trim();
    if trimmed.is_empty() {
        return Err(syntax(
            base,
            location,
            "empty expression: expected a token id",
        ));
    }
    let at = base + leading_ws(head);
    let (binding, id_text, id_at) = match binding_prefix(trimmed) {
        Some(("token", rest)) => {
            let after = trimmed.len() - rest.len();
            (Binding::Token, rest.trim(), at + after + leading_ws(rest))
        }
        Some((other, _)) => {
            let what = if other == "config" {
                "`config:` expressions are not offered: a transform reads the proxy's configuration as req.configuration"
            } else {
                "`token_intent:` expressions are not offered: token intents do not exist in Tessera"
            };
            return Err(syntax(at, location, what));
        }
        None => (Binding::Data, trimmed, at),
    };
    let token_id = id_text.parse::<TokenId>().map_err(|e| {
        let why = match e {
            TokenIdError::Length if id_text.is_empty() => "a token id is expected",
            _ => "it is not a token id",
        };
        syntax(
            id_at,
            location,
            format!("`{}`: {why} ({e})", truncate(id_text)),
        )
    })?;
    Ok((binding, token_id))
}

/// The form a head starts with (`token`, `config`, `token_intent`, with white space allowed
/// before the colon), and the rest after the colon.
fn binding_prefix(head: &str) -> Option<(&'static str, &str)> {
    ["token_intent", "token", "config"]
        .into_iter()
        .find_map(|form| {
            let rest = head.strip_prefix(form)?.trim_start();
            rest.strip_prefix(':').map(|rest| (form, rest))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "6f9619ff-8b86-4011-b42d-00c04fc964ff";

    fn offset_of(e: DetokenizeError) -> usize {
        match e {
            DetokenizeError::Syntax { offset, .. } => offset,
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn finds_expressions_with_their_spans() {
        let text = format!("a {{{{{ID}}}}} b {{{{ token: {ID} | json: '$.data' | last4 }}}}");
        let found = scan(&text, "body").expect("valid");
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].start, found[0].end), (2, 2 + 4 + ID.len()));
        assert_eq!(found[0].binding, Binding::Data);
        assert_eq!(found[1].binding, Binding::Token);
        assert_eq!(found[1].chain.filters().len(), 2);
        assert_eq!(&text[found[1].end..], "");
    }

    #[test]
    fn whitespace_is_free_and_uuids_are_case_insensitive() {
        let text = format!("{{{{   {}   |to_string|  last4 }}}}", ID.to_uppercase());
        let found = scan(&text, "body").expect("valid");
        assert_eq!(found[0].token_id.to_string(), ID);
        assert_eq!(found[0].chain.filters().len(), 2);
        assert!(scan("no expressions here { } }} {%", "body")
            .expect("ok")
            .is_empty());
    }

    #[test]
    fn chosen_ids_are_the_text_up_to_the_pipe_or_the_braces() {
        for (text, id) in [
            ("{{ 1234_phone }}", "1234_phone"),
            ("{{1234_phone|last4}}", "1234_phone"),
            (
                "{{ token: k7dn59wb@gmail.com | json: '$.data' }}",
                "k7dn59wb@gmail.com",
            ),
            ("{{ 9273610263384242 }}", "9273610263384242"),
            ("{{ it's }}", "it's"),
        ] {
            let found = scan(text, "body").expect(text);
            assert_eq!(found[0].token_id.to_string(), id, "{text}");
        }
    }

    #[test]
    fn errors_carry_byte_offsets() {
        assert_eq!(
            offset_of(scan("xx {{ no }}", "body").expect_err("short id")),
            6
        );
        assert_eq!(
            offset_of(scan("xx {{ ", "body").expect_err("unterminated")),
            3
        );
        assert_eq!(offset_of(scan("{{}}", "body").expect_err("empty")), 2);
        let text = format!("{{{{{ID} | shout}}}}");
        assert_eq!(
            offset_of(scan(&text, "body").expect_err("unknown filter")),
            2 + ID.len() + 3,
            "points at the name"
        );
        let text = format!("{{{{token:{ID}|json: '$[' }}}}");
        assert!(matches!(
            scan(&text, "body"),
            Err(DetokenizeError::Syntax { .. })
        ));
        for refused in [
            "{{ config: KEY }}",
            "{{ token_intent: abc }}",
            "{% if x %}y{% endif %}",
        ] {
            assert!(scan(refused, "body").is_err(), "{refused}");
        }
    }

    #[test]
    fn quoted_arguments_may_hold_braces_and_pipes() {
        let text = format!("{{{{ token: {ID} | json: \"$.data['a}}|b']\" }}}}");
        let found = scan(&text, "body").expect("valid");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].end, text.len());
    }
}
