//! The shape of a `/tokenize` body (docs/api.md, "`POST /tokenize`"), as Basis Theory's
//! `tokenize` takes it: an object whose `type` is a string is a token request, answered by
//! its token; a bare value (a string, a number or a boolean) becomes a `token` holding it,
//! answered by its id; arrays are walked element by element and other objects member by
//! member, at most [`MAX_DEPTH`] levels deep. The answer has the body's shape.

use serde::{
    de::{MapAccess, Visitor},
    Deserialize, Deserializer,
};
use serde_json::Value;
use tessera_domain::{
    vault::MAX_BULK, NewToken, Permission, Principal, Token, TokenType, ValidationErrors,
};

use crate::{body::parse_json, problem::ApiError, views::TokenView};

/// How deep arrays and objects may nest around a token request or a bare value: the body's
/// own level is 1.
pub(super) const MAX_DEPTH: usize = 8;

/// What a place of the body holds, and what replaces it in the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shape {
    /// A token request, answered by its token.
    Request,
    /// A bare value, answered by the id of the `token` holding it.
    Bare,
    /// An array, walked element by element.
    List(Vec<Shape>),
    /// An object without a string `type`, walked member by member.
    Members(Vec<(String, Shape)>),
}

/// The token requests of a body, each with the prefix its problems are keyed under
/// (`[3].`, `card.`, `primary_card.`, `sensitive_tags[0]`), in the order of the answer.
pub(super) type Labelled = Vec<(String, NewToken)>;

impl Shape {
    /// The token requests of the JSON `body` and its shape. The forms every SDK sends (an
    /// array of requests, an object of requests, one request) are read in one pass; any
    /// other body is walked as a tree.
    pub(super) fn read(body: &[u8]) -> Result<(Labelled, Shape), ApiError> {
        match body.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'[') => match parse_json::<Vec<NewToken>>(body) {
                Ok(inputs) => {
                    let shape = Shape::List(vec![Shape::Request; inputs.len()]);
                    let labels = (0..inputs.len()).map(|i| format!("[{i}]."));
                    Ok((labels.zip(inputs).collect(), shape))
                }
                Err(_) => Self::walk_body(body),
            },
            Some(b'{') if parse_json::<TypeProbe>(body)?.is_request() => {
                Ok((vec![(String::new(), parse_json(body)?)], Shape::Request))
            }
            Some(b'{') => match parse_json::<Named>(body) {
                Ok(Named(members)) => {
                    let shape = members.iter().map(|(n, _)| (n.clone(), Shape::Request));
                    let shape = Shape::Members(shape.collect());
                    let labelled = members.into_iter().map(|(n, t)| (format!("{n}."), t));
                    Ok((labelled.collect(), shape))
                }
                Err(_) => Self::walk_body(body),
            },
            _ => Self::walk_body(body),
        }
    }

    /// Reads `body` as a tree (malformed JSON and repeated member names are refused as for
    /// every body) and walks it.
    fn walk_body(body: &[u8]) -> Result<(Labelled, Shape), ApiError> {
        let tree: Value = parse_json(body)?;
        let mut found = Vec::new();
        let shape = walk(&tree, "", 1, &mut found)?;
        Ok((found, shape))
    }

    /// The answer: this shape with each request replaced by its token (as a write's answer
    /// shows it to `viewer`) and each bare value by its token's id; `tokens` in request order.
    pub(super) fn answer(self, tokens: Vec<Token>, viewer: &Principal) -> Value {
        let mut tokens = tokens.into_iter();
        self.fill(&mut tokens, viewer)
    }

    fn fill(self, tokens: &mut impl Iterator<Item = Token>, viewer: &Principal) -> Value {
        match self {
            Shape::Request => tokens.next().map_or(Value::Null, |t| {
                let view = TokenView::written(t, viewer, Permission::TokenCreate);
                serde_json::to_value(view).unwrap_or_default()
            }),
            Shape::Bare => tokens
                .next()
                .map_or(Value::Null, |t| Value::String(t.id.to_string())),
            Shape::List(items) => {
                Value::Array(items.into_iter().map(|s| s.fill(tokens, viewer)).collect())
            }
            Shape::Members(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(name, s)| (name, s.fill(tokens, viewer)))
                    .collect(),
            ),
        }
    }
}

/// Walks `value` found at `path` (`""` for the body, `primary_card`, `tags[1]`), `depth`
/// levels down, adding its token requests to `found`.
fn walk(value: &Value, path: &str, depth: usize, found: &mut Labelled) -> Result<Shape, ApiError> {
    let field = if path.is_empty() { "body" } else { path };
    if depth > MAX_DEPTH {
        return Err(ApiError::field(
            field,
            format!("nests deeper than {MAX_DEPTH} levels of arrays and objects"),
        ));
    }
    if found.len() > MAX_BULK {
        return Err(ApiError::field(
            "body",
            format!("must hold 1 to {MAX_BULK} token requests"),
        ));
    }
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}.")
    };
    match value {
        Value::Object(members) if members.get("type").is_some_and(Value::is_string) => {
            let input = request(value, &prefix)?;
            found.push((prefix, input));
            Ok(Shape::Request)
        }
        Value::Object(members) => members
            .iter()
            .map(|(name, v)| {
                Ok((
                    name.clone(),
                    walk(v, &joined(path, name), depth + 1, found)?,
                ))
            })
            .collect::<Result<_, ApiError>>()
            .map(Shape::Members),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| walk(v, &format!("{path}[{i}]"), depth + 1, found))
            .collect::<Result<_, ApiError>>()
            .map(Shape::List),
        Value::Null => Err(ApiError::field(
            field,
            "is null: a bare value is a string, a number or a boolean",
        )),
        bare => {
            found.push((prefix, NewToken::new(TokenType::Token, bare.clone())));
            Ok(Shape::Bare)
        }
    }
}

fn joined(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// The token request `value`, read as `POST /tokens` reads its body, its problems keyed under
/// `prefix`.
fn request(value: &Value, prefix: &str) -> Result<NewToken, ApiError> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    parse_json::<NewToken>(&bytes).map_err(|e| match e.errors() {
        Some(fields) => {
            let mut under = ValidationErrors::new();
            for (field, messages) in fields {
                let field = match field.as_str() {
                    "body" => prefix.trim_end_matches('.').to_string(),
                    f => format!("{prefix}{f}"),
                };
                for message in messages {
                    under.add(field.clone(), message.clone());
                }
            }
            ApiError::validation(&under)
        }
        None => e,
    })
}

/// The `type` member of a JSON object, every other member skipped unread.
#[derive(Deserialize)]
struct TypeProbe {
    #[serde(rename = "type", default)]
    kind: Option<Value>,
}

impl TypeProbe {
    /// Whether the object is one token request: its `type` is a string.
    fn is_request(&self) -> bool {
        self.kind.as_ref().is_some_and(Value::is_string)
    }
}

/// An object whose members are token requests, in order.
struct Named(Vec<(String, NewToken)>);

impl<'de> Deserialize<'de> for Named {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Named;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object whose members are token requests")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Named, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, NewToken>()? {
                    members.push(member);
                }
                Ok(Named(members))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bytes(body: Value) -> Vec<u8> {
        serde_json::to_vec(&body).expect("json")
    }

    fn fields(e: &ApiError) -> Vec<String> {
        e.errors()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn labels(found: &Labelled) -> Vec<&str> {
        found.iter().map(|(l, _)| l.as_str()).collect()
    }

    #[test]
    fn the_sdks_three_forms_are_told_apart() {
        let one = json!({"type": "token", "data": "a"});
        let (found, shape) = Shape::read(&bytes(json!([one, one]))).expect("list");
        assert_eq!(shape, Shape::List(vec![Shape::Request; 2]));
        assert_eq!(labels(&found), vec!["[0].", "[1]."]);
        let (found, shape) = Shape::read(&bytes(one.clone())).expect("single");
        assert_eq!((found.len(), shape), (1, Shape::Request));
        // A member named `type` holds a request, not a string: still the object form.
        let named = json!({"card": one, "type": one});
        let (found, shape) = Shape::read(&bytes(named)).expect("named");
        assert_eq!(labels(&found), vec!["card.", "type."]);
        assert_eq!(
            shape,
            Shape::Members(vec![
                ("card".into(), Shape::Request),
                ("type".into(), Shape::Request)
            ])
        );
    }

    #[test]
    fn bare_values_and_composites_are_walked_in_order() {
        let body = json!({"first_name": "John", "age": 42, "vip": true,
            "primary_card": {"type": "card", "data": {"number": "4242424242424242"}},
            "sensitive_tags": ["preferred", {"type": "token", "data": "vip"}]});
        let (found, shape) = Shape::read(&bytes(body)).expect("composite");
        assert_eq!(
            labels(&found),
            vec![
                "first_name.",
                "age.",
                "vip.",
                "primary_card.",
                "sensitive_tags[0].",
                "sensitive_tags[1]."
            ]
        );
        assert_eq!(found[1].1.token_type, TokenType::Token);
        assert_eq!(
            shape,
            Shape::Members(vec![
                ("first_name".into(), Shape::Bare),
                ("age".into(), Shape::Bare),
                ("vip".into(), Shape::Bare),
                ("primary_card".into(), Shape::Request),
                (
                    "sensitive_tags".into(),
                    Shape::List(vec![Shape::Bare, Shape::Request])
                ),
            ])
        );
        // A bare value alone, and an array mixing both.
        let (found, shape) = Shape::read(&bytes(json!("x"))).expect("bare");
        assert_eq!((labels(&found), shape), (vec![""], Shape::Bare));
        let (found, shape) =
            Shape::read(&bytes(json!(["a", {"type": "token", "data": 1}]))).expect("mixed");
        assert_eq!(labels(&found), vec!["[0].", "[1]."]);
        assert_eq!(shape, Shape::List(vec![Shape::Bare, Shape::Request]));
    }

    #[test]
    fn problems_name_their_place_in_every_form() {
        let bad = json!({"type": "card", "data": {"number": 1}, "extra": true});
        let e = Shape::read(&bytes(json!([{"type": "token", "data": "a"}, bad.clone()])))
            .expect_err("list");
        assert_eq!(fields(&e), vec!["[1].extra"]);
        let e = Shape::read(&bytes(
            json!({"ok": {"type": "token", "data": "a"}, "card": bad.clone()}),
        ))
        .expect_err("named");
        assert_eq!(fields(&e), vec!["card.extra"]);
        let e = Shape::read(&bytes(bad.clone())).expect_err("single");
        assert_eq!(fields(&e), vec!["extra"]);
        let e = Shape::read(&bytes(json!({"name": "x", "deep": {"tags": ["a", bad]}})))
            .expect_err("composite");
        assert_eq!(fields(&e), vec!["deep.tags[1].extra"]);
        let e = Shape::read(&bytes(json!({"name": null}))).expect_err("null");
        assert_eq!(fields(&e), vec!["name"]);
        let e = Shape::read(&bytes(json!(null))).expect_err("null body");
        assert_eq!(fields(&e), vec!["body"]);
        for malformed in [&b"["[..], b"{\"type\": ", b"", b"  nope"] {
            let e = Shape::read(malformed).expect_err("malformed");
            assert_eq!(fields(&e), vec!["body"]);
            assert!(e.detail().contains("malformed JSON"), "{}", e.detail());
        }
        let e = Shape::read(b"{\"a\": \"x\", \"a\": \"y\"}").expect_err("repeated");
        assert_eq!(fields(&e), vec!["a"]);
        // Leading white space does not hide the form.
        let (found, shape) =
            Shape::read(b" \n [{\"type\": \"token\", \"data\": 1}]").expect("list");
        assert_eq!((found.len(), shape), (1, Shape::List(vec![Shape::Request])));
    }

    #[test]
    fn depth_and_count_are_bounded() {
        let mut deep = json!("x");
        for _ in 0..MAX_DEPTH - 1 {
            deep = json!([deep]);
        }
        assert!(
            Shape::read(&bytes(deep.clone())).is_ok(),
            "{MAX_DEPTH} levels"
        );
        let e = Shape::read(&bytes(json!([deep]))).expect_err("one more");
        assert_eq!(fields(&e), vec![format!("{}", "[0]".repeat(MAX_DEPTH))]);
        let many: Vec<Value> = (0..=MAX_BULK + 5).map(|i| json!(i)).collect();
        let e = Shape::read(&bytes(json!(many))).expect_err("too many");
        assert_eq!(fields(&e), vec!["body"]);
    }
}
