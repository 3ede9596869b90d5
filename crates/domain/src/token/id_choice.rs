//! How a new token gets its id (docs/api.md, "Token ids"): generated, chosen by the caller, or
//! drawn from an alias template over its data.

use std::sync::Arc;

use serde_json::Value;
use tessera_expressions::{Scope, Template};

use crate::{ids::TokenId, validation::ValidationErrors};

/// How many ids an alias template is drawn for, the first included, before a token whose
/// every draw was taken gets a random UUID instead (as Basis Theory does).
pub const ALIAS_DRAWS: usize = 10;

/// How a new token's id is chosen.
#[derive(Debug, Clone)]
pub enum IdChoice {
    /// A random UUID.
    Generated,
    /// The caller's id, unique in the tenant (409 when taken).
    Chosen(TokenId),
    /// An alias template over the data, first drawn as `first`.
    Alias {
        /// The template.
        template: Arc<Template>,
        /// Its first draw.
        first: TokenId,
    },
}

impl IdChoice {
    /// Reads the `id` a create request gave (if any) against its `data`, recording a problem
    /// under `id` when it is no id, or a template that does not render one.
    pub(crate) fn read(
        raw: Option<&str>,
        data: Option<&Value>,
        errors: &mut ValidationErrors,
    ) -> Self {
        let Some(raw) = raw else {
            return Self::Generated;
        };
        if !Template::is_template(raw) {
            return match raw.parse::<TokenId>() {
                Ok(id) => Self::Chosen(id),
                Err(e) => {
                    errors.add("id", e.to_string());
                    Self::Generated
                }
            };
        }
        let template = match Template::parse(raw, &["data"]) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                errors.add("id", format!("invalid alias template {e}"));
                return Self::Generated;
            }
        };
        // Without data there is nothing to draw from: `data` is refused on its own.
        let Some(data) = data else {
            return Self::Generated;
        };
        match draw(&template, data) {
            Ok(first) => Self::Alias { template, first },
            Err(message) => {
                errors.add("id", message);
                Self::Generated
            }
        }
    }

    /// The id the token is first tried with.
    pub fn first(&self) -> TokenId {
        match self {
            Self::Generated => TokenId::new(),
            Self::Chosen(id) => id.clone(),
            Self::Alias { first, .. } => first.clone(),
        }
    }

    /// The id to try after the `attempt`-th one (1 for the second try) was taken, or `None`
    /// when there is no other: an alias is drawn again up to [`ALIAS_DRAWS`] times in all,
    /// then becomes a random UUID; a chosen id is the caller's, and a generated UUID is never
    /// taken (a conflict on one is something else).
    pub fn redraw(&self, attempt: usize, data: &Value) -> Option<TokenId> {
        match self {
            Self::Chosen(_) | Self::Generated => None,
            Self::Alias { template, .. } if attempt < ALIAS_DRAWS => {
                Some(draw(template, data).unwrap_or_default())
            }
            Self::Alias { .. } => Some(TokenId::new()),
        }
    }

    /// Whether the caller chose the id itself (not a template).
    pub fn is_chosen(&self) -> bool {
        matches!(self, Self::Chosen(_))
    }

    /// Whether the caller asked for an id at all, chosen or drawn from a template.
    pub fn is_asked(&self) -> bool {
        !matches!(self, Self::Generated)
    }
}

/// One draw of `template` over `data`: a valid token id, or why not.
fn draw(template: &Template, data: &Value) -> Result<TokenId, String> {
    let rendered = template
        .render(&Scope::new().with("data", data))
        .map_err(|e| format!("the alias template failed: {e}"))?;
    let text = match rendered {
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        Value::Null => return Err("the alias template rendered null".into()),
        _ => return Err("the alias template must render a string".into()),
    };
    text.parse::<TokenId>()
        .map_err(|e| format!("the alias template rendered no valid id: the id {e}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(raw: &str, data: Value) -> Result<IdChoice, Vec<String>> {
        let mut errors = ValidationErrors::new();
        let choice = IdChoice::read(Some(raw), Some(&data), &mut errors);
        errors
            .into_result()
            .map(|()| choice)
            .map_err(|e| e.fields().values().flatten().cloned().collect())
    }

    #[test]
    fn ids_are_chosen_or_drawn_from_their_data() {
        assert!(
            matches!(read("1234_phone", json!(1)), Ok(IdChoice::Chosen(id)) if id.to_string() == "1234_phone")
        );
        let ssn = read(
            "{{ data | alias_preserve_format: 0, 4 }}",
            json!("111-22-3333"),
        )
        .expect("alias");
        let first = ssn.first().to_string();
        assert!(first.ends_with("-3333") && first.len() == 11, "{first}");
        let card = json!({"number": "4242424242424242"});
        let alias = read(
            "{{ data.number | alias_preserve_format: 0, 4 }}",
            card.clone(),
        )
        .expect("alias");
        let redrawn = alias.redraw(1, &card).expect("drawn again").to_string();
        assert!(
            redrawn.ends_with("4242") && redrawn.len() == 16,
            "{redrawn}"
        );
        assert!(alias
            .redraw(ALIAS_DRAWS, &card)
            .expect("uuid")
            .as_uuid()
            .is_some());
        assert!(read("abc", json!(1))
            .expect("chosen")
            .redraw(1, &json!(1))
            .is_none());
    }

    #[test]
    fn templates_that_render_no_id_are_refused() {
        for (raw, data) in [
            ("{{ data.missing }}", json!({})),
            ("{{ data }}", json!("ab")),
            ("{{ data }}", json!("a/b/c")),
            ("{{ data }}", json!({"a": 1})),
            ("{{ data | card_exp: 'MM' }}", json!("x")),
            ("{{ data | shout }}", json!("abc")),
            ("{% if data %}x{% endif %}", json!("abc")),
            ("{{ metadata.x }}", json!("abc")),
            ("token:abc", json!("abc")),
            ("a b c", json!("abc")),
        ] {
            assert!(read(raw, data).is_err(), "{raw}");
        }
        assert!(
            read("{{ data }}", json!(12345)).is_ok(),
            "a number renders as its text"
        );
    }
}
