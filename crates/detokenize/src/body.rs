//! Bodies: find the expressions (and the token ids they need), then render the body with the
//! fetched values, in a way that cannot break the body's syntax.

use std::collections::BTreeSet;

use serde_json::Value;
use tessera_domain::TokenId;

use crate::{
    error::DetokenizeError,
    expression::{scan, Expression},
    render::{evaluate, raw, splice, Context, SourceSize, Values},
};

/// How a body is treated, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// `application/json` or `application/*+json`.
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// `text/*`.
    Text,
    /// Anything else, or no content type: passed through untouched.
    Opaque,
}

/// Where a body holds `{{` that was not looked at as an expression: almost always a request
/// sent with the wrong `Content-Type` (curl's `-d` sends a form), whose expressions would reach
/// the destination unresolved. The gateway says so in a response header (docs/api.md,
/// "Substitution").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unscanned {
    /// In a form field's name (a JSON document sent as a form is one long field name).
    FormFieldName,
    /// In a JSON body that is not valid JSON.
    MalformedJson,
    /// In a body whose `Content-Type` is never scanned.
    ContentType,
}

impl Unscanned {
    /// The warning, for a response header (visible ASCII).
    pub fn warning(self) -> &'static str {
        match self {
            Unscanned::FormFieldName => {
                "the form body holds {{ in a field name, where expressions are not substituted; was it JSON sent without Content-Type: application/json?"
            }
            Unscanned::MalformedJson => {
                "the body holds {{ but is not valid JSON, so nothing in it was substituted"
            }
            Unscanned::ContentType => {
                "the body holds {{ but its Content-Type is not scanned for expressions (application/json, application/x-www-form-urlencoded and text/* are)"
            }
        }
    }
}

impl BodyKind {
    /// Classifies a `Content-Type` header value.
    pub fn from_content_type(content_type: Option<&str>) -> Self {
        let Some(ct) = content_type else {
            return BodyKind::Opaque;
        };
        let essence = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.split_once('/') {
            Some(("application", "json")) => BodyKind::Json,
            Some(("application", sub)) if sub.ends_with("+json") => BodyKind::Json,
            Some(("application", "x-www-form-urlencoded")) => BodyKind::Form,
            Some(("text", _)) => BodyKind::Text,
            _ => BodyKind::Opaque,
        }
    }
}

/// One step of a JSON pointer.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone)]
enum Shape {
    /// Nothing to substitute: forward the original bytes.
    Untouched,
    /// A parsed JSON document and the strings in it that hold expressions.
    Json(Value, Vec<(Vec<Step>, String, Vec<Expression>)>),
    /// Decoded form pairs; values may hold expressions.
    Form(Vec<(String, String, Vec<Expression>)>),
    /// A text body.
    Text(String, Vec<Expression>),
}

/// A prepared body: parsed once, with the token ids it references. It holds the caller's
/// body, which may carry secrets of its own: `Debug` shows its kind and the ids only.
#[derive(Clone)]
pub struct Template {
    shape: Shape,
    ids: BTreeSet<TokenId>,
    /// Where `{{` was seen but not looked at.
    unscanned: Option<Unscanned>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.shape {
            Shape::Untouched => "untouched",
            Shape::Json(..) => "json",
            Shape::Form(_) => "form",
            Shape::Text(..) => "text",
        };
        f.debug_struct("Template")
            .field("kind", &kind)
            .field("ids", &self.ids)
            .finish()
    }
}

impl Template {
    /// Parses `body` as `kind` and finds its expressions. Bodies that cannot be read as their
    /// kind (invalid JSON, non-UTF-8 text) and opaque bodies are left untouched.
    pub fn prepare(kind: BodyKind, body: &[u8]) -> Result<Self, DetokenizeError> {
        // Cheap exit for the common case: nothing that could open an expression.
        let may_hold = match kind {
            BodyKind::Form => contains(body, b"{{") || contains_ci(body, b"%7b"),
            BodyKind::Json | BodyKind::Text => contains(body, b"{{"),
            BodyKind::Opaque => {
                let unscanned = contains(body, b"{{").then_some(Unscanned::ContentType);
                return Ok(Self::untouched(unscanned));
            }
        };
        if !may_hold {
            return Ok(Self::untouched(None));
        }
        let mut unscanned = None;
        let shape = match kind {
            BodyKind::Json => match serde_json::from_slice::<Value>(body) {
                Ok(value) => {
                    let mut found = Vec::new();
                    collect_json(&value, &mut Vec::new(), &mut found)?;
                    if found.is_empty() {
                        Shape::Untouched
                    } else {
                        Shape::Json(value, found)
                    }
                }
                Err(_) => {
                    unscanned = Some(Unscanned::MalformedJson);
                    Shape::Untouched
                }
            },
            BodyKind::Form => {
                let mut any = false;
                let mut pairs = Vec::new();
                for (key, value) in form_urlencoded::parse(body) {
                    if key.contains("{{") {
                        unscanned = Some(Unscanned::FormFieldName);
                    }
                    let exprs = scan(&value, &format!("form field {key}"))?;
                    any |= !exprs.is_empty();
                    pairs.push((key.into_owned(), value.into_owned(), exprs));
                }
                if any {
                    Shape::Form(pairs)
                } else {
                    Shape::Untouched
                }
            }
            BodyKind::Text => match std::str::from_utf8(body) {
                Ok(text) => {
                    let exprs = scan(text, "body")?;
                    if exprs.is_empty() {
                        Shape::Untouched
                    } else {
                        Shape::Text(text.to_string(), exprs)
                    }
                }
                Err(_) => Shape::Untouched,
            },
            BodyKind::Opaque => Shape::Untouched,
        };
        let ids = match &shape {
            Shape::Untouched => BTreeSet::new(),
            Shape::Json(_, found) => found
                .iter()
                .flat_map(|(_, _, e)| e)
                .map(|e| e.token_id.clone())
                .collect(),
            Shape::Form(pairs) => pairs
                .iter()
                .flat_map(|(_, _, e)| e)
                .map(|e| e.token_id.clone())
                .collect(),
            Shape::Text(_, exprs) => exprs.iter().map(|e| e.token_id.clone()).collect(),
        };
        Ok(Self {
            shape,
            ids,
            unscanned,
        })
    }

    fn untouched(unscanned: Option<Unscanned>) -> Self {
        Self {
            shape: Shape::Untouched,
            ids: BTreeSet::new(),
            unscanned,
        }
    }

    /// Where the body holds `{{` that was not looked at, if it does.
    pub fn unscanned(&self) -> Option<Unscanned> {
        self.unscanned
    }

    /// The distinct token ids the body references.
    pub fn token_ids(&self) -> &BTreeSet<TokenId> {
        &self.ids
    }

    /// True when rendering would return the original bytes.
    pub fn is_untouched(&self) -> bool {
        matches!(self.shape, Shape::Untouched)
    }

    /// Upper bound, in bytes, of the rendered body: the original length plus what each
    /// expression can expand to, from the sizes `size_of` gives (see [`SourceSize`]). Computed
    /// before any token is decrypted; it depends on the request and on token sizes, never on
    /// token content.
    pub fn bound(&self, original_len: usize, size_of: &impl Fn(&TokenId) -> SourceSize) -> u64 {
        let add = |exprs: &[Expression], context: Context| {
            exprs.iter().fold(0u64, |n, e| {
                n.saturating_add(e.bound(size_of(&e.token_id), context))
            })
        };
        let expanded = match &self.shape {
            Shape::Untouched => 0,
            Shape::Json(_, found) => found.iter().fold(0u64, |n, (_, text, exprs)| {
                let context = match exprs.as_slice() {
                    [only] if only.start == 0 && only.end == text.len() => Context::JsonValue,
                    _ => Context::JsonText,
                };
                n.saturating_add(add(exprs, context))
            }),
            Shape::Form(pairs) => pairs.iter().fold(0u64, |n, (_, _, exprs)| {
                n.saturating_add(add(exprs, Context::Form))
            }),
            Shape::Text(_, exprs) => add(exprs, Context::Text),
        };
        (original_len as u64).saturating_add(expanded)
    }

    /// The tokens that `token:` expressions name (they need the whole token object).
    pub(crate) fn object_ids(&self) -> impl Iterator<Item = &TokenId> + '_ {
        let exprs: Box<dyn Iterator<Item = &Expression>> = match &self.shape {
            Shape::Untouched => Box::new(std::iter::empty()),
            Shape::Json(_, found) => Box::new(found.iter().flat_map(|(_, _, e)| e)),
            Shape::Form(pairs) => Box::new(pairs.iter().flat_map(|(_, _, e)| e)),
            Shape::Text(_, exprs) => Box::new(exprs.iter()),
        };
        exprs
            .filter(|e| e.binding == crate::expression::Binding::Token)
            .map(|e| &e.token_id)
    }

    /// The body with every expression replaced, or `None` when the original bytes stand.
    ///
    /// JSON: a string that is exactly one expression takes the value itself (object, number, …);
    /// other strings get the value as text, escaped by the JSON serializer. Form: values are
    /// re-encoded. Text: values are inserted raw. Only an unknown token fails.
    pub fn render(&self, values: &Values) -> Result<Option<Vec<u8>>, DetokenizeError> {
        match &self.shape {
            Shape::Untouched => Ok(None),
            Shape::Json(doc, found) => {
                let mut doc = doc.clone();
                for (path, text, exprs) in found {
                    let replacement = match exprs.as_slice() {
                        [only] if only.start == 0 && only.end == text.len() => {
                            evaluate(only, values)?
                        }
                        _ => Value::String(splice(text, exprs, values, raw)?),
                    };
                    if let Some(slot) = locate(&mut doc, path) {
                        *slot = replacement;
                    }
                }
                Ok(Some(serde_json::to_vec(&doc).unwrap_or_default()))
            }
            Shape::Form(pairs) => {
                let mut out = form_urlencoded::Serializer::new(String::new());
                for (key, value, exprs) in pairs {
                    if exprs.is_empty() {
                        out.append_pair(key, value);
                    } else {
                        out.append_pair(key, &splice(value, exprs, values, raw)?);
                    }
                }
                Ok(Some(out.finish().into_bytes()))
            }
            Shape::Text(text, exprs) => Ok(Some(splice(text, exprs, values, raw)?.into_bytes())),
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

fn pointer(path: &[Step]) -> String {
    let mut s = String::from("body");
    for step in path {
        match step {
            Step::Key(k) => {
                s.push('/');
                s.push_str(k);
            }
            Step::Index(i) => {
                s.push('/');
                s.push_str(&i.to_string());
            }
        }
    }
    s
}

fn collect_json(
    value: &Value,
    path: &mut Vec<Step>,
    found: &mut Vec<(Vec<Step>, String, Vec<Expression>)>,
) -> Result<(), DetokenizeError> {
    match value {
        Value::String(s) if s.contains("{{") => {
            let exprs = scan(s, &pointer(path))?;
            if !exprs.is_empty() {
                found.push((path.clone(), s.clone(), exprs));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                collect_json(item, path, found)?;
                path.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                path.push(Step::Key(key.clone()));
                collect_json(item, path, found)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

fn locate<'a>(doc: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let mut at = doc;
    for step in path {
        at = match step {
            Step::Key(k) => at.get_mut(k.as_str())?,
            Step::Index(i) => at.get_mut(*i)?,
        };
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::ResolvedToken;
    use serde_json::json;

    const A: &str = "6f9619ff-8b86-4011-b42d-00c04fc964ff";
    const B: &str = "0f5a6360-63f6-457e-b5b2-fd49ebc5fd53";

    fn values(entries: &[(&str, Value)]) -> Values {
        entries
            .iter()
            .map(|(id, data)| {
                let token_id: TokenId = id.parse().expect("id");
                (
                    token_id,
                    ResolvedToken {
                        data: data.clone().into(),
                        object: Some(json!({"id": id, "data": data}).into()),
                    },
                )
            })
            .collect()
    }

    fn render(kind: BodyKind, body: &str, vals: &Values) -> String {
        let t = Template::prepare(kind, body.as_bytes()).expect("prepare");
        String::from_utf8(
            t.render(vals)
                .expect("render")
                .unwrap_or_else(|| body.as_bytes().to_vec()),
        )
        .expect("utf8")
    }

    #[test]
    fn braces_left_unlooked_at_are_reported_by_where_they_are() {
        let json = format!(r#"{{"card":"{{{{ {A} | json: '$.number' }}}}"}}"#);
        let unscanned = |kind, body: &str| {
            Template::prepare(kind, body.as_bytes())
                .expect("prepare")
                .unscanned()
        };
        assert_eq!(
            unscanned(BodyKind::Form, &json),
            Some(Unscanned::FormFieldName)
        );
        assert_eq!(
            unscanned(BodyKind::Opaque, &json),
            Some(Unscanned::ContentType)
        );
        assert_eq!(
            unscanned(BodyKind::Json, &json[1..]),
            Some(Unscanned::MalformedJson)
        );
        assert_eq!(unscanned(BodyKind::Json, &json), None);
        assert_eq!(
            unscanned(BodyKind::Form, &format!("card={{{{ {A} }}}}")),
            None
        );
        assert_eq!(unscanned(BodyKind::Opaque, "plain bytes"), None);
        for kind in [
            Unscanned::FormFieldName,
            Unscanned::MalformedJson,
            Unscanned::ContentType,
        ] {
            assert!(http_visible(kind.warning()), "{kind:?}");
        }
    }

    fn http_visible(text: &str) -> bool {
        text.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
    }

    #[test]
    fn json_whole_string_takes_the_value_and_partial_strings_are_escaped() {
        let tricky = "quote \" backslash \\ braces }} newline \n and {{".to_string() + B + "}}";
        let vals = values(&[(A, json!({"number": "4242", "n": 12})), (B, json!(tricky))]);
        let body = format!(
            r#"{{"card": "{{{{{A}}}}}", "num": "{{{{{A} | json: '$.n'}}}}", "note": "x-{{{{{B}}}}}-y", "keep": 1}}"#
        );
        let out: Value =
            serde_json::from_str(&render(BodyKind::Json, &body, &vals)).expect("valid JSON out");
        assert_eq!(out["card"], json!({"number": "4242", "n": 12}));
        assert_eq!(out["num"], json!(12));
        assert_eq!(
            out["note"],
            json!(format!("x-{tricky}-y")),
            "inserted literally, never re-expanded"
        );
        assert_eq!(out["keep"], json!(1));
    }

    #[test]
    fn json_without_expressions_is_untouched() {
        let t = Template::prepare(BodyKind::Json, br#"{"a": "{ not }"}"#).expect("ok");
        assert!(t.is_untouched() && t.token_ids().is_empty());
        let t = Template::prepare(BodyKind::Json, b"{{not json").expect("ok");
        assert!(t.is_untouched(), "invalid JSON passes through");
    }

    #[test]
    fn form_values_are_decoded_substituted_and_reencoded() {
        let vals = values(&[(A, json!("a&b=c d"))]);
        let body = format!("card=%7B%7B{A}%7D%7D&x=1&y={{{{{A}|last4}}}}");
        let out = render(BodyKind::Form, &body, &vals);
        let pairs: Vec<(String, String)> = form_urlencoded::parse(out.as_bytes())
            .into_owned()
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("card".into(), "a&b=c d".into()),
                ("x".into(), "1".into()),
                ("y".into(), "=c d".into())
            ]
        );
    }

    #[test]
    fn text_is_raw_and_other_bodies_untouched() {
        let vals = values(&[(A, json!({"k": 1}))]);
        assert_eq!(
            render(BodyKind::Text, &format!("v={{{{{A}}}}}."), &vals),
            "v={\"k\":1}."
        );
        let t = Template::prepare(BodyKind::Opaque, format!("{{{{{A}}}}}").as_bytes()).expect("ok");
        assert!(t.is_untouched());
        let t = Template::prepare(BodyKind::Text, &[0xff, b'{', b'{']).expect("non-utf8 passes");
        assert!(t.is_untouched());
    }

    #[test]
    fn ids_are_collected_once_and_unknown_ids_fail() {
        let body = format!(r#"["{{{{{A}}}}}", "{{{{{A}}}}}", "{{{{ token: {B} }}}}"]"#);
        let t = Template::prepare(BodyKind::Json, body.as_bytes()).expect("ok");
        assert_eq!(t.token_ids().len(), 2);
        let only_a = values(&[(A, json!(1))]);
        assert!(matches!(t.render(&only_a), Err(DetokenizeError::UnknownToken(id)) if id == B));
    }

    #[test]
    fn syntax_errors_name_the_json_location() {
        let e = Template::prepare(BodyKind::Json, br#"{"card": {"number": "{{ no }}"}}"#)
            .expect_err("bad");
        assert!(e.to_string().contains("body/card/number"), "{e}");
    }

    #[test]
    fn content_types() {
        assert_eq!(
            BodyKind::from_content_type(Some("application/json; charset=utf-8")),
            BodyKind::Json
        );
        assert_eq!(
            BodyKind::from_content_type(Some("application/vnd.api+json")),
            BodyKind::Json
        );
        assert_eq!(
            BodyKind::from_content_type(Some("Application/X-WWW-Form-Urlencoded")),
            BodyKind::Form
        );
        assert_eq!(
            BodyKind::from_content_type(Some("text/plain")),
            BodyKind::Text
        );
        assert_eq!(
            BodyKind::from_content_type(Some("application/octet-stream")),
            BodyKind::Opaque
        );
        assert_eq!(BodyKind::from_content_type(None), BodyKind::Opaque);
    }
}
