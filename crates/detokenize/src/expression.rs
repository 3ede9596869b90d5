//! Scanning text for `{{ … }}` and parsing what is inside.

use tessera_domain::TokenId;

use crate::{
    error::{truncate, DetokenizeError},
    filter::Filter,
};

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
    pub filters: Vec<Filter>,
}

impl Expression {
    /// Finds every expression in `text`; see [`scan`].
    pub fn scan(text: &str, location: &str) -> Result<Vec<Expression>, DetokenizeError> {
        scan(text, location)
    }
}

fn syntax(offset: usize, location: &str, message: impl Into<String>) -> DetokenizeError {
    DetokenizeError::Syntax {
        offset,
        location: location.to_string(),
        message: message.into(),
    }
}

/// Finds every expression in `text`, in order. `location` names the string in error messages.
///
/// The closing `}}` is searched outside single- and double-quoted sections, so a JSONPath
/// argument may contain `}}`.
pub(crate) fn scan(text: &str, location: &str) -> Result<Vec<Expression>, DetokenizeError> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(rel) = memchr::memmem::find(&bytes[from..], b"{{") {
        let start = from + rel;
        let inner_start = start + 2;
        let mut j = inner_start;
        let mut quote: Option<u8> = None;
        let close = loop {
            if j + 1 >= bytes.len() {
                return Err(syntax(
                    start,
                    location,
                    "unterminated expression: missing `}}`",
                ));
            }
            let b = bytes[j];
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None if b == b'\'' || b == b'"' => quote = Some(b),
                None if b == b'}' && bytes[j + 1] == b'}' => break j,
                None => {}
            }
            j += 1;
        };
        let (binding, token_id, filters) =
            parse_inner(&text[inner_start..close], inner_start, location)?;
        found.push(Expression {
            start,
            end: close + 2,
            binding,
            token_id,
            filters,
        });
        from = close + 2;
    }
    Ok(found)
}

/// Splits `s` on `|` outside quotes, returning each part with its byte offset in `s`.
fn split_pipes(s: &str) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let mut quote: Option<char> = None;
    let mut part_start = 0;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '|' => {
                parts.push((part_start, &s[part_start..i]));
                part_start = i + 1;
            }
            None => {}
        }
    }
    parts.push((part_start, &s[part_start..]));
    parts
}

/// Offset of the first non-whitespace character of `s` (or its length).
fn leading_ws(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

fn parse_inner(
    inner: &str,
    base: usize,
    location: &str,
) -> Result<(Binding, TokenId, Vec<Filter>), DetokenizeError> {
    let mut parts = split_pipes(inner).into_iter();
    let (_, head) = parts.next().unwrap_or((0, ""));
    if head.trim().is_empty() {
        return Err(syntax(
            base,
            location,
            "empty expression: expected a token id",
        ));
    }
    let head_offset = base + leading_ws(head);
    let trimmed = head.trim();
    let (binding, id_text, id_offset) = match trimmed.strip_prefix("token") {
        Some(rest) if rest.trim_start().starts_with(':') => {
            let after_colon = &rest.trim_start()[1..];
            let offset =
                head_offset + (trimmed.len() - after_colon.len()) + leading_ws(after_colon);
            (Binding::Token, after_colon.trim(), offset)
        }
        _ => (Binding::Data, trimmed, head_offset),
    };
    let token_id = id_text.parse::<TokenId>().map_err(|_| {
        syntax(
            id_offset,
            location,
            format!("`{}` is not a token id", truncate(id_text)),
        )
    })?;
    let mut filters = Vec::new();
    for (offset, part) in parts {
        filters.push(Filter::parse(part, base + offset, location)?);
    }
    Ok((binding, token_id, filters))
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
        assert_eq!(found[1].filters.len(), 2);
        assert_eq!(&text[found[1].end..], "");
    }

    #[test]
    fn whitespace_is_free_and_ids_are_case_insensitive() {
        let text = format!("{{{{   {}   |to_string|  last4 }}}}", ID.to_uppercase());
        let found = scan(&text, "body").expect("valid");
        assert_eq!(found[0].token_id.to_string(), ID);
        assert_eq!(found[0].filters.len(), 2);
        assert!(scan("no expressions here { } }}", "body")
            .expect("ok")
            .is_empty());
    }

    #[test]
    fn errors_carry_byte_offsets() {
        assert_eq!(
            offset_of(scan("xx {{ nope }}", "body").expect_err("bad id")),
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
    }

    #[test]
    fn quoted_arguments_may_hold_braces_and_pipes() {
        let text = format!("{{{{ token: {ID} | json: \"$.data['a}}|b']\" }}}}");
        let found = scan(&text, "body").expect("valid");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].end, text.len());
    }
}
