//! The `query` string of token searches (docs/api.md "Search query"), as Basis Theory's SDKs
//! send it: `field:value` terms joined by `AND`, over `id`, `type`, `fingerprint`,
//! `container` (a prefix, like the structured `container`), `metadata.<key>` (exact) and
//! `data` (a search index value, exact: docs/api.md "Search indexes").
//! Values may be quoted, `"..."`, with `\"` and `\\` escapes; inside quotes every character
//! is literal. Anything else — another field, `OR`, `NOT`, grouping, wildcards, fuzzy or
//! range syntax — is refused, naming the term, rather than read as something it is not.

use crate::{
    container::Container,
    ids::TokenId,
    metadata::{MAX_FILTER_PAIRS, MAX_KEY_CHARS, MAX_VALUE_CHARS},
    store::TokenSearch,
    token::TokenType,
    validation::{char_len, has_nul},
};

/// Longest query accepted, in bytes: room for every term at its longest value.
pub const MAX_QUERY_LEN: usize = 8 * 1024;
/// Most terms one query may hold (metadata terms are bounded by [`MAX_FILTER_PAIRS`] too).
pub const MAX_TERMS: usize = 16;
/// Longest piece of the query quoted back in a problem, in characters.
const QUOTED_CHARS: usize = 80;
/// Characters an unquoted value may not hold: they are query syntax (wildcards, grouping,
/// fuzzy and boost marks, escapes) that this search does not implement.
const SYNTAX: &[char] = &['*', '?', '~', '^', '(', ')', '[', ']', '{', '}', '\\', '"'];

/// Why a query was refused; each names the piece of the query at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// Longer than [`MAX_QUERY_LEN`].
    #[error("must be at most {MAX_QUERY_LEN} bytes")]
    TooLong,
    /// More than [`MAX_TERMS`] terms, or more than [`MAX_FILTER_PAIRS`] metadata terms.
    #[error("may hold at most {MAX_TERMS} terms, {MAX_FILTER_PAIRS} of them on metadata")]
    TooManyTerms,
    /// A piece that is not `field:value`.
    #[error("`{0}` is not a `field:value` term")]
    NotATerm(String),
    /// A field that cannot be searched (e.g. `data`).
    #[error("`{term}`: `{field}` cannot be searched; the fields are id, type, fingerprint, container and metadata.<key>")]
    UnknownField {
        /// The term.
        term: String,
        /// Its field.
        field: String,
    },
    /// An operator other than `AND`, or a term with no operator before it.
    #[error("`{0}`: terms are joined by `AND` only (no OR, NOT, + or -)")]
    Operator(String),
    /// Wildcards, grouping, ranges or other syntax in an unquoted value.
    #[error("`{0}`: wildcards, grouping and other query syntax are not supported (quote the value to search for it literally)")]
    Syntax(String),
    /// A quoted value with no closing quote, or a backslash escaping something else than `"`
    /// or `\`.
    #[error("`{0}`: a quoted value must end with `\"` and escape only `\\\"` and `\\\\`")]
    Quote(String),
    /// A value its field does not accept.
    #[error("`{term}`: {reason}")]
    Value {
        /// The term.
        term: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// `id`, `type`, `fingerprint` or `container` given twice.
    #[error("`{0}`: this field may be given once")]
    Repeated(String),
    /// `AND` with no term after it (or before it).
    #[error("`AND` must stand between two terms")]
    DanglingAnd,
}

/// One `field:value` term: the text it was written as, its field and its unquoted value.
#[derive(Debug)]
struct Term<'a> {
    text: &'a str,
    field: &'a str,
    value: String,
}

/// Parses `query` into search criteria (only `ids`, `types`, `fingerprint`,
/// `container_prefix` and `metadata` are set). An empty query is every token.
pub fn parse(query: &str) -> Result<TokenSearch, QueryError> {
    if query.len() > MAX_QUERY_LEN {
        return Err(QueryError::TooLong);
    }
    let mut search = TokenSearch::default();
    let mut rest = query.trim_start();
    let mut terms = 0usize;
    while !rest.is_empty() {
        let (term, after) = read_term(rest)?;
        terms += 1;
        if terms > MAX_TERMS {
            return Err(QueryError::TooManyTerms);
        }
        apply(&mut search, &term)?;
        rest = after.trim_start();
        if rest.is_empty() {
            break;
        }
        let (word, after) = split_word(rest);
        if !word.eq_ignore_ascii_case("AND") {
            return Err(QueryError::Operator(quote(word)));
        }
        rest = after.trim_start();
        if rest.is_empty() {
            return Err(QueryError::DanglingAnd);
        }
    }
    if search.metadata.len() > MAX_FILTER_PAIRS {
        return Err(QueryError::TooManyTerms);
    }
    Ok(search)
}

/// `s` up to its first whitespace, and the rest.
fn split_word(s: &str) -> (&str, &str) {
    s.split_at(s.find(char::is_whitespace).unwrap_or(s.len()))
}

/// At most [`QUOTED_CHARS`] characters of `s`, for a problem's message.
fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

/// Reads the term `s` starts with, returning it and what follows it.
fn read_term(s: &str) -> Result<(Term<'_>, &str), QueryError> {
    let (word, _) = split_word(s);
    if ["AND", "OR", "NOT", "&&", "||"]
        .iter()
        .any(|op| word.eq_ignore_ascii_case(op))
    {
        return Err(if word.eq_ignore_ascii_case("AND") {
            QueryError::DanglingAnd
        } else {
            QueryError::Operator(quote(word))
        });
    }
    if word.starts_with(['+', '-', '!']) {
        return Err(QueryError::Operator(quote(word)));
    }
    let Some((field, value_start)) = word.split_once(':') else {
        return Err(QueryError::NotATerm(quote(word)));
    };
    if field.is_empty() || field.contains(SYNTAX) {
        return Err(QueryError::NotATerm(quote(word)));
    }
    let value_at = field.len() + 1;
    let (value, end) = if value_start.starts_with('"') {
        read_quoted(s, value_at)?
    } else {
        if value_start.is_empty() {
            return Err(QueryError::NotATerm(quote(word)));
        }
        if value_start.contains(SYNTAX) || value_start.contains("&&") || value_start.contains("||")
        {
            return Err(QueryError::Syntax(quote(word)));
        }
        (value_start.to_string(), word.len())
    };
    let term = Term {
        text: &s[..end],
        field,
        value,
    };
    Ok((term, &s[end..]))
}

/// The quoted value starting at byte `open` of `s` (its `"`), unescaped, and the byte just
/// after its closing quote, which must end the term.
fn read_quoted(s: &str, open: usize) -> Result<(String, usize), QueryError> {
    let mut value = String::new();
    let mut chars = s[open + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let end = open + 1 + i + 1;
                if s[end..].starts_with(|c: char| !c.is_whitespace()) {
                    return Err(QueryError::Syntax(quote(split_word(s).0)));
                }
                return Ok((value, end));
            }
            '\\' => match chars.next() {
                Some((_, escaped @ ('"' | '\\'))) => value.push(escaped),
                _ => return Err(QueryError::Quote(quote(s))),
            },
            c => value.push(c),
        }
    }
    Err(QueryError::Quote(quote(s)))
}

/// Adds `term` to `search`, checking its value as the structured search checks the same
/// criterion.
fn apply(search: &mut TokenSearch, term: &Term<'_>) -> Result<(), QueryError> {
    let bad = |reason: &str| QueryError::Value {
        term: quote(term.text),
        reason: reason.to_string(),
    };
    let once = |present: bool| {
        if present {
            Err(QueryError::Repeated(quote(term.text)))
        } else {
            Ok(())
        }
    };
    let value = term.value.as_str();
    match term.field {
        "id" => {
            once(!search.ids.is_empty())?;
            let id = value
                .parse::<TokenId>()
                .map_err(|_| bad("not a token id"))?;
            search.ids.push(id);
        }
        "type" => {
            once(!search.types.is_empty())?;
            let t = TokenType::parse(value)
                .ok_or_else(|| bad(&format!("not a token type ({})", TokenType::NAMES)))?;
            search.types.push(t);
        }
        "fingerprint" => {
            once(search.fingerprint.is_some())?;
            if value.len() != 64 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad("a fingerprint is 64 hexadecimal digits"));
            }
            search.fingerprint = Some(value.to_ascii_lowercase());
        }
        "data" => {
            if value.is_empty() || char_len(value) > MAX_VALUE_CHARS || has_nul(value) {
                return Err(bad(&format!(
                    "a data value is 1 to {MAX_VALUE_CHARS} characters, without NUL"
                )));
            }
            search
                .data
                .push(crate::secret::Secret::new(term.value.clone()));
        }
        "container" => {
            once(search.container_prefix.is_some())?;
            let c = Container::parse(value).map_err(|e| bad(&e.to_string()))?;
            search.container_prefix = Some(c);
        }
        field => {
            let Some(key) = field.strip_prefix("metadata.") else {
                return Err(QueryError::UnknownField {
                    term: quote(term.text),
                    field: quote(field),
                });
            };
            if key.is_empty() || char_len(key) > MAX_KEY_CHARS || has_nul(key) {
                return Err(bad(&format!(
                    "a metadata key is 1 to {MAX_KEY_CHARS} characters, without NUL"
                )));
            }
            if char_len(value) > MAX_VALUE_CHARS || has_nul(value) {
                return Err(bad(&format!(
                    "a metadata value is at most {MAX_VALUE_CHARS} characters, without NUL"
                )));
            }
            search.metadata.push((key.to_string(), term.value.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn data_terms_are_kept_as_written_and_may_repeat() {
        let s = parse("data:3333 AND data:\"two words\" AND type:social_security_number")
            .expect("valid");
        let terms: Vec<&str> = s.data.iter().map(|d| d.expose().as_str()).collect();
        assert_eq!(terms, vec!["3333", "two words"]);
        assert_eq!(s.types, vec![TokenType::SocialSecurityNumber]);
        assert!(
            s.data_hashes.is_empty(),
            "hashed by the vault, not the parser"
        );
    }

    #[test]
    fn every_accepted_form() {
        let id = TokenId::new();
        let q = format!(
            "id:{id} AND type:card and fingerprint:{} And container:\"/PCI/\" \
             AND metadata.customer:c_42 AND metadata.note:\"two words \\\"quoted\\\" \\\\ *?\"",
            FP.to_uppercase()
        );
        let s = parse(&q).expect("valid");
        assert_eq!(s.ids, vec![id]);
        assert_eq!(s.types, vec![TokenType::Card]);
        assert_eq!(s.fingerprint.as_deref(), Some(FP));
        assert_eq!(
            s.container_prefix.map(|c| c.as_str().to_string()),
            Some("/pci/".into())
        );
        assert_eq!(
            s.metadata,
            pairs(&[("customer", "c_42"), ("note", "two words \"quoted\" \\ *?")])
        );
        assert_eq!(parse("").expect("empty"), TokenSearch::default());
        assert_eq!(parse("  \t ").expect("blank"), TokenSearch::default());
        let s = parse("  container:/pci/\tAND\nmetadata.a.b:x:y  ").expect("whitespace");
        assert_eq!(s.metadata, pairs(&[("a.b", "x:y")]));
        // The same key twice must hold both values: an AND that matches nothing.
        let s = parse("metadata.k:1 AND metadata.k:2 AND metadata.e:\"\"").expect("valid");
        assert_eq!(s.metadata, pairs(&[("k", "1"), ("k", "2"), ("e", "")]));
        assert_eq!(
            parse("metadata.n:-5").expect("negative").metadata,
            pairs(&[("n", "-5")])
        );
    }

    /// What a refusal must be.
    type Expected = fn(&QueryError) -> bool;

    /// Each of `cases` is refused as expected, with a message.
    fn refused(cases: &[(&str, Expected)]) {
        for (query, expected) in cases {
            let e = parse(query).expect_err(query);
            assert!(expected(&e), "{query}: {e:?}");
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn every_refused_field_operator_and_syntax_names_its_term() {
        refused(&[
            (
                "enrichments:4242",
                |e| matches!(e, QueryError::UnknownField { field, .. } if field == "enrichments"),
            ),
            ("data:\"\"", |e| matches!(e, QueryError::Value { .. })),
            ("Type:card", |e| {
                matches!(e, QueryError::UnknownField { .. })
            }),
            ("metadata:x", |e| {
                matches!(e, QueryError::UnknownField { .. })
            }),
            (
                "type:card OR type:bank",
                |e| matches!(e, QueryError::Operator(w) if w == "OR"),
            ),
            ("type:card && type:bank", |e| {
                matches!(e, QueryError::Operator(_))
            }),
            (
                "NOT type:card",
                |e| matches!(e, QueryError::Operator(w) if w == "NOT"),
            ),
            ("-type:card", |e| matches!(e, QueryError::Operator(_))),
            ("+type:card", |e| matches!(e, QueryError::Operator(_))),
            (
                "type:card type:bank",
                |e| matches!(e, QueryError::Operator(w) if w == "type:bank"),
            ),
            (
                "metadata.k:ab*",
                |e| matches!(e, QueryError::Syntax(t) if t == "metadata.k:ab*"),
            ),
            ("metadata.k:a?c", |e| matches!(e, QueryError::Syntax(_))),
            ("metadata.k:abc~", |e| matches!(e, QueryError::Syntax(_))),
            ("(type:card)", |e| {
                matches!(e, QueryError::NotATerm(_) | QueryError::Syntax(_))
            }),
            ("type:(card)", |e| matches!(e, QueryError::Syntax(_))),
            ("metadata.k:[a TO b]", |e| {
                matches!(e, QueryError::Syntax(_))
            }),
            ("metadata.k:\"ab\"~2", |e| {
                matches!(e, QueryError::Syntax(_))
            }),
        ]);
    }

    #[test]
    fn every_refused_quote_term_and_value_names_its_term() {
        refused(&[
            ("metadata.k:\"open", |e| matches!(e, QueryError::Quote(_))),
            ("metadata.k:\"bad \\n escape\"", |e| {
                matches!(e, QueryError::Quote(_))
            }),
            (
                "card",
                |e| matches!(e, QueryError::NotATerm(w) if w == "card"),
            ),
            ("type:", |e| matches!(e, QueryError::NotATerm(_))),
            (":card", |e| matches!(e, QueryError::NotATerm(_))),
            ("type:card AND", |e| matches!(e, QueryError::DanglingAnd)),
            ("AND type:card", |e| matches!(e, QueryError::DanglingAnd)),
            ("type:card AND AND type:bank", |e| {
                matches!(e, QueryError::DanglingAnd)
            }),
            (
                "type:gold",
                |e| matches!(e, QueryError::Value { term, .. } if term == "type:gold"),
            ),
            ("id:no", |e| matches!(e, QueryError::Value { .. })),
            ("fingerprint:abc", |e| matches!(e, QueryError::Value { .. })),
            ("container:pci", |e| matches!(e, QueryError::Value { .. })),
            ("metadata.k:\"a\u{0}b\"", |e| {
                matches!(e, QueryError::Value { .. })
            }),
            (
                "type:card AND type:bank",
                |e| matches!(e, QueryError::Repeated(t) if t == "type:bank"),
            ),
            ("container:/a/ AND container:/b/", |e| {
                matches!(e, QueryError::Repeated(_))
            }),
        ]);
    }

    #[test]
    fn queries_are_bounded() {
        assert_eq!(
            parse(&"x".repeat(MAX_QUERY_LEN + 1)),
            Err(QueryError::TooLong)
        );
        let terms = |n: usize, field: &str| {
            (0..n)
                .map(|i| format!("{field}{i}:v"))
                .collect::<Vec<_>>()
                .join(" AND ")
        };
        assert!(parse(&terms(MAX_FILTER_PAIRS, "metadata.k")).is_ok());
        assert_eq!(
            parse(&terms(MAX_FILTER_PAIRS + 1, "metadata.k")),
            Err(QueryError::TooManyTerms)
        );
        let mut many = terms(MAX_TERMS, "metadata.k");
        many.push_str(" AND type:card");
        assert_eq!(parse(&many), Err(QueryError::TooManyTerms));
        let long = "y".repeat(MAX_VALUE_CHARS + 1);
        assert!(matches!(
            parse(&format!("metadata.k:{long}")),
            Err(QueryError::Value { .. })
        ));
        let quoted = quote(&"z".repeat(500));
        assert_eq!(
            quoted.chars().count(),
            QUOTED_CHARS + 1,
            "problems quote a bounded piece"
        );
    }
}
