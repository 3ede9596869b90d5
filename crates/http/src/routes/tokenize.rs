//! `POST /tokenize`: several tokens in one call, all or none, in the three forms Basis Theory's
//! SDKs send (docs/api.md): an array of token requests, an object whose members are token
//! requests, or one token request. The answer has the request's shape, each token request
//! replaced by its token.

use actix_web::{middleware::from_fn, web, HttpRequest};
use serde::{
    de::{MapAccess, Visitor},
    Deserialize, Deserializer,
};
use serde_json::Value;
use tessera_domain::{audit::AuditAction, NewToken, Permission, Principal, Token, TokenId};
use tessera_service::header_names::HeaderNames;

use super::{
    recorded::{self, Answer},
    tokens::{ids, mark_imported},
};
use crate::{
    auth::{self, Caller},
    body::{parse_json, JsonBytes},
    browser,
    idempotency::idempotent,
    problem::ApiError,
    state::ApiState,
    views::TokenView,
};

/// The OpenAPI operations of this module.
#[derive(utoipa::OpenApi)]
#[openapi(paths(tokenize))]
pub(super) struct Doc;

pub(super) fn configure(cfg: &mut web::ServiceConfig, names: &HeaderNames) {
    cfg.service(
        web::resource("/tokenize")
            .wrap(from_fn(idempotent))
            .wrap(from_fn(auth::require_api_key))
            .wrap(browser::cors(names))
            .wrap(from_fn(browser::share_only_if_admitted))
            .route(web::post().to(tokenize)),
    );
}

/// Creates 1–100 tokens at once, all or none, without data in the answer. The body is an array
/// of token requests (answered with an array, in order), an object whose members are token
/// requests (answered with an object of the same names), or one token request (an object whose
/// `type` is a string; answered with one token). Needs `token:create` on every target
/// container; one invalid request is a 400 naming it (`[3].data.number`, `card.data.number`),
/// and nothing is stored.
#[utoipa::path(post, path = "/tokenize", tag = "tokens",
    request_body(content = serde_json::Value, description = "An array of 1 to 100 token create requests, an object whose 1 to 100 members are token create requests, or one token create request."),
    responses((status = 201, description = "The tokens, in the shape of the request.", body = serde_json::Value)))]
async fn tokenize(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
    JsonBytes(body): JsonBytes,
) -> Answer {
    let (inputs, shape) = Shape::read(&body)?;
    browser::spend_for_tokens(&state.browsers, &req, inputs.len())?;
    let chosen: Vec<TokenId> = inputs.iter().filter_map(NewToken::chosen_id).collect();
    let labelled = shape.labels(inputs.len()).into_iter().zip(inputs).collect();
    let tokens = state
        .vault
        .create_labelled_tokens(&caller, labelled)
        .await?;
    let created = ids(&tokens);
    let imported = created
        .iter()
        .filter(|id| chosen.contains(id))
        .cloned()
        .collect();
    let answer = shape.answer(tokens, &caller);
    let response = recorded::created(answer, AuditAction::TokenCreated, created)?;
    Ok(mark_imported(response, imported))
}

/// The form of a `/tokenize` body.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    /// An array.
    List,
    /// An object of token requests, with these member names in order.
    Named(Vec<String>),
    /// One token request.
    Single,
}

impl Shape {
    /// The token requests of the JSON `body` and its form. A JSON object is one token request
    /// when its `type` member is a string, else each member is one. Each request is read as
    /// `POST /tokens` reads its body, so problems name their place (`[3].data`, `card.data`).
    /// An array (the import path) is parsed once; an object is probed for its `type` first.
    fn read(body: &[u8]) -> Result<(Vec<NewToken>, Shape), ApiError> {
        match body.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'[') => Ok((parse_json::<Vec<NewToken>>(body)?, Shape::List)),
            Some(b'{') if parse_json::<TypeProbe>(body)?.is_request() => {
                Ok((vec![parse_json::<NewToken>(body)?], Shape::Single))
            }
            Some(b'{') => {
                let Named(members) = parse_json::<Named>(body)?;
                let (names, inputs) = members.into_iter().unzip();
                Ok((inputs, Shape::Named(names)))
            }
            _ => {
                // Malformed JSON is reported as such; well-formed JSON of no form, as that.
                parse_json::<serde::de::IgnoredAny>(body)?;
                Err(ApiError::field(
                    "body",
                    "must be an array of token requests, an object whose members are token requests, or one token request",
                ))
            }
        }
    }

    /// What problems with each of the `count` requests are keyed under: `[3].`, `card.`, or
    /// nothing.
    fn labels(&self, count: usize) -> Vec<String> {
        match self {
            Shape::List => (0..count).map(|i| format!("[{i}].")).collect(),
            Shape::Named(names) => names.iter().map(|n| format!("{n}.")).collect(),
            Shape::Single => vec![String::new()],
        }
    }

    /// The answer: the request's shape with each request replaced by its token (without data).
    fn answer(self, tokens: Vec<Token>, viewer: &Principal) -> Value {
        let mut views = tokens.into_iter().map(|t| {
            let view = TokenView::written(t, viewer, Permission::TokenCreate);
            serde_json::to_value(view).unwrap_or_default()
        });
        match self {
            Shape::List => Value::Array(views.collect()),
            Shape::Single => views.next().unwrap_or_default(),
            Shape::Named(names) => Value::Object(names.into_iter().zip(views).collect()),
        }
    }
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

    #[test]
    fn the_three_forms_are_told_apart() {
        let one = json!({"type": "token", "data": "a"});
        let (inputs, shape) = Shape::read(&bytes(json!([one, one]))).expect("list");
        assert_eq!((inputs.len(), shape), (2, Shape::List));
        let (inputs, shape) = Shape::read(&bytes(one.clone())).expect("single");
        assert_eq!((inputs.len(), shape), (1, Shape::Single));
        // A member named `type` holds a request, not a string: still the object form.
        let named = json!({"card": one, "type": one});
        let (inputs, shape) = Shape::read(&bytes(named)).expect("named");
        assert_eq!(inputs.len(), 2);
        assert_eq!(shape, Shape::Named(vec!["card".into(), "type".into()]));
    }

    #[test]
    fn problems_name_their_place_in_each_form() {
        let bad = json!({"type": "card", "data": {"number": 1}, "extra": true});
        let e = Shape::read(&bytes(json!([{"type": "token", "data": "a"}, bad.clone()])))
            .expect_err("list");
        assert_eq!(fields(&e), vec!["[1].extra"]);
        let e = Shape::read(&bytes(
            json!({"ok": {"type": "token", "data": "a"}, "card": bad.clone()}),
        ))
        .expect_err("named");
        assert_eq!(fields(&e), vec!["card.extra"]);
        let e = Shape::read(&bytes(bad)).expect_err("single");
        assert_eq!(fields(&e), vec!["extra"]);
        let e = Shape::read(&bytes(json!({"first_name": "John"}))).expect_err("a bare value");
        assert_eq!(fields(&e), vec!["first_name"]);
        for not_a_form in [json!("x"), json!(3), json!(null)] {
            let e = Shape::read(&bytes(not_a_form)).expect_err("scalar");
            assert_eq!(fields(&e), vec!["body"]);
        }
        for malformed in [&b"["[..], b"{\"type\": ", b"", b"  nope"] {
            let e = Shape::read(malformed).expect_err("malformed");
            assert_eq!(fields(&e), vec!["body"]);
            assert!(e.detail().contains("malformed JSON"), "{}", e.detail());
        }
        // Leading white space does not hide the form.
        let (inputs, shape) =
            Shape::read(b" \n [{\"type\": \"token\", \"data\": 1}]").expect("list");
        assert_eq!((inputs.len(), shape), (1, Shape::List));
    }
}
