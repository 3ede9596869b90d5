//! Masks: what the `mask` transform shows of a token's data (docs/api.md, "Masks").
//!
//! A mask is a JSON value whose strings are templates over `data`, rendered on the current
//! data each time it is shown: a string that is exactly one `{{ … }}` object renders the value
//! with its JSON type (`"{{ data.expiration_month }}"` gives `12`), any other string renders
//! as a string, and members absent from the mask are absent from the answer. Each type has
//! Basis Theory's default mask; `token` has none, so a masked `token` shows no `data`.

use serde_json::{json, Value};
use tessera_expressions::{Scope, Template, MAX_RENDERED};

use super::token_type::TokenType;

/// The mask of a card, as Basis Theory defines it: the number's last four digits and the
/// expiry.
const CARD: &str = r#"{
    "number": "{{ data.number | reveal_last: 4 }}",
    "expiration_month": "{{ data.expiration_month }}",
    "expiration_year": "{{ data.expiration_year }}"
}"#;

/// The mask of a bank account: the routing number and the account number's last four.
const BANK: &str = r#"{
    "routing_number": "{{ data.routing_number }}",
    "account_number": "{{ data.account_number | reveal_last: 4 }}"
}"#;

/// The mask of the single-value types: their last four characters that are letters or digits.
const LAST_FOUR: &str = "{{ data | reveal_last: 4 }}";

/// The mask `token_type`'s tokens have (Basis Theory's defaults; docs/api.md, "Token types");
/// `None` for `token`.
pub fn default_mask(token_type: TokenType) -> Option<Value> {
    match token_type {
        TokenType::Token => None,
        TokenType::Card => serde_json::from_str(CARD).ok(),
        TokenType::Bank => serde_json::from_str(BANK).ok(),
        TokenType::CardNumber
        | TokenType::SocialSecurityNumber
        | TokenType::EmployerIdNumber
        | TokenType::UsBankAccountNumber
        | TokenType::UsBankRoutingNumber => Some(json!(LAST_FOUR)),
    }
}

/// `mask` rendered over `data`; `None` when any of its templates does not render (a filter
/// that does not apply to this data, a rendering past its bound), so that a mask never shows
/// part of what it was meant to hide, nor an error about the data.
pub fn render_mask(mask: &Value, data: &Value) -> Option<Value> {
    let scope = Scope::new().with("data", data);
    let mut budget = MAX_RENDERED;
    render_value(mask, &scope, &mut budget)
}

/// The mask a token of `token_type` shows over `data` ([`default_mask`], rendered).
pub fn masked(token_type: TokenType, data: &Value) -> Option<Value> {
    render_mask(&default_mask(token_type)?, data)
}

fn render_value(mask: &Value, scope: &Scope<'_>, budget: &mut u64) -> Option<Value> {
    match mask {
        Value::String(text) if Template::is_template(text) => Template::parse(text, &["data"])
            .ok()?
            .render_within(scope, budget)
            .ok(),
        Value::Array(items) => items
            .iter()
            .map(|item| render_value(item, scope, budget))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        Value::Object(members) => members
            .iter()
            .map(|(k, v)| Some((k.clone(), render_value(v, scope, budget)?)))
            .collect::<Option<serde_json::Map<_, _>>>()
            .map(Value::Object),
        literal => Some(literal.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_masks_are_basis_theorys() {
        let card = json!({"number": "4242424242424242", "expiration_month": 12,
            "expiration_year": 2030, "cvc": "123"});
        assert_eq!(
            masked(TokenType::Card, &card),
            Some(json!({"number": "XXXXXXXXXXXX4242", "expiration_month": 12,
                "expiration_year": 2030}))
        );
        let bank = json!({"routing_number": "021000021", "account_number": "1234567890"});
        assert_eq!(
            masked(TokenType::Bank, &bank),
            Some(json!({"routing_number": "021000021", "account_number": "XXXXXX7890"}))
        );
        for (t, data, shown) in [
            (
                TokenType::CardNumber,
                "4242424242424242",
                "XXXXXXXXXXXX4242",
            ),
            (TokenType::CardNumber, "36227206271667", "XXXXXXXXXX1667"),
            (
                TokenType::SocialSecurityNumber,
                "123-45-6789",
                "XXX-XX-6789",
            ),
            (TokenType::SocialSecurityNumber, "123456789", "XXXXX6789"),
            (TokenType::EmployerIdNumber, "12-3456789", "XX-XXX6789"),
            (TokenType::UsBankAccountNumber, "1234567890", "XXXXXX7890"),
            (TokenType::UsBankRoutingNumber, "021000021", "XXXXX0021"),
        ] {
            assert_eq!(masked(t, &json!(data)), Some(json!(shown)), "{t:?}");
        }
        assert_eq!(masked(TokenType::Token, &json!("secret")), None);
    }

    #[test]
    fn a_card_without_an_expiry_shows_null_there() {
        let card = json!({"number": "4242424242424242"});
        assert_eq!(
            masked(TokenType::Card, &card),
            Some(
                json!({"number": "XXXXXXXXXXXX4242", "expiration_month": null,
                "expiration_year": null})
            )
        );
    }

    #[test]
    fn members_absent_from_a_mask_are_absent_and_literals_stay() {
        let data = json!({"name": {"first": "John", "last": "Doe"}, "ssn": "123-45-6789"});
        let mask = json!({"name": {"first": "{{ data.name.first }}",
            "last": "{{ data.name.last | slice: 0, 1 }}."}, "kind": "person", "n": 1});
        assert_eq!(
            render_mask(&mask, &data),
            Some(json!({"name": {"first": "John", "last": "D."}, "kind": "person", "n": 1}))
        );
    }

    #[test]
    fn a_template_that_does_not_render_shows_nothing_at_all() {
        // `reveal_last` does not apply to an object: the whole mask is withheld rather
        // than a part of it shown, or an error naming the data.
        let data = json!({"number": {"nested": "4242424242424242"}});
        assert_eq!(masked(TokenType::Card, &data), None);
        assert_eq!(render_mask(&json!("{{ data | nope }}"), &json!("x")), None);
    }
}
