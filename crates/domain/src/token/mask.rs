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
use crate::validation::ValidationErrors;

/// The longest mask accepted, as JSON text.
pub const MAX_MASK_BYTES: usize = 4096;
/// How deep a mask's arrays and objects may nest (its own level is 1).
pub const MAX_MASK_DEPTH: usize = 8;
/// The most templates one mask may hold.
pub const MAX_MASK_TEMPLATES: usize = 32;

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

/// The mask a token shows over `data`: its own `mask` when it has one, else its type's
/// ([`default_mask`]), rendered.
pub fn masked(token_type: TokenType, own: Option<&Value>, data: &Value) -> Option<Value> {
    match own {
        Some(mask) => render_mask(mask, data),
        None => render_mask(&default_mask(token_type)?, data),
    }
}

/// Checks a token's own `mask` (a create's or an update's), problems under `mask`: JSON of at
/// most [`MAX_MASK_BYTES`] bytes, nesting at most [`MAX_MASK_DEPTH`] levels, at most
/// [`MAX_MASK_TEMPLATES`] templates over `data`, each of which renders over `data` (filters
/// apply strictly, as a search index's do).
pub fn validate_mask(mask: &Value, data: &Value, errors: &mut ValidationErrors) {
    if serde_json::to_vec(mask).map_or(usize::MAX, |b| b.len()) > MAX_MASK_BYTES {
        errors.add(
            "mask",
            format!("must be at most {MAX_MASK_BYTES} bytes of JSON"),
        );
        return;
    }
    let mut templates = 0usize;
    let mut budget = MAX_RENDERED;
    let scope = Scope::new().with("data", data);
    check_value(mask, "mask", 1, &mut templates, &scope, &mut budget, errors);
    if templates > MAX_MASK_TEMPLATES {
        errors.add(
            "mask",
            format!("must hold at most {MAX_MASK_TEMPLATES} templates"),
        );
    }
}

fn check_value(
    mask: &Value,
    at: &str,
    depth: usize,
    templates: &mut usize,
    scope: &Scope<'_>,
    budget: &mut u64,
    errors: &mut ValidationErrors,
) {
    if depth > MAX_MASK_DEPTH {
        errors.add(at, format!("nests deeper than {MAX_MASK_DEPTH} levels"));
        return;
    }
    match mask {
        Value::String(text) if Template::is_template(text) => {
            *templates += 1;
            let rendered = Template::parse(text, &["data"])
                .map_err(|e| format!("invalid template {e}"))
                .and_then(|t| t.render_within(scope, budget).map_err(|e| e.to_string()));
            if let Err(message) = rendered {
                errors.add(at, message);
            }
        }
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| {
            check_value(
                v,
                &format!("{at}[{i}]"),
                depth + 1,
                templates,
                scope,
                budget,
                errors,
            )
        }),
        Value::Object(members) => members.iter().for_each(|(k, v)| {
            check_value(
                v,
                &format!("{at}.{k}"),
                depth + 1,
                templates,
                scope,
                budget,
                errors,
            )
        }),
        _ => {}
    }
}

/// The places of `data` (`data`, `data.number`, `data.cards[0]`) whose whole value a mask
/// shows: a template of `mask` renders exactly that value. What a write that sets such a mask
/// records in its audit event (docs/api.md, "Masks").
pub fn whole_fields(mask: &Value, data: &Value) -> Vec<String> {
    let scope = Scope::new().with("data", data);
    let mut shown = Vec::new();
    rendered_templates(mask, &scope, &mut { MAX_RENDERED }, &mut shown);
    let mut places = Vec::new();
    leaves(data, "data", &mut |path, leaf| {
        if shown.iter().any(|s| s == leaf) && !places.contains(&path) {
            places.push(path);
        }
    });
    if shown.iter().any(|s| s == data) && !data.is_object() && !data.is_array() {
        places.retain(|p| p != "data");
        places.insert(0, "data".to_string());
    }
    places
}

fn rendered_templates(mask: &Value, scope: &Scope<'_>, budget: &mut u64, out: &mut Vec<Value>) {
    match mask {
        Value::String(text) if Template::is_template(text) => {
            if let Ok(v) = Template::parse(text, &["data"])
                .map_err(|_| ())
                .and_then(|t| t.render_within(scope, budget).map_err(|_| ()))
            {
                out.push(v);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| rendered_templates(v, scope, budget, out)),
        Value::Object(members) => members
            .values()
            .for_each(|v| rendered_templates(v, scope, budget, out)),
        _ => {}
    }
}

/// Calls `f` with the path and value of every string and number in `value`.
fn leaves(value: &Value, path: &str, f: &mut impl FnMut(String, &Value)) {
    match value {
        Value::String(_) | Value::Number(_) => f(path.to_string(), value),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| leaves(v, &format!("{path}[{i}]"), f)),
        Value::Object(members) => members
            .iter()
            .for_each(|(k, v)| leaves(v, &format!("{path}.{k}"), f)),
        _ => {}
    }
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

/// A token's own mask (`None`: it has none) with `patch` merged in as RFC 7396 merges a JSON
/// merge patch: members of an object patch are set, or removed when `null`, recursively; any
/// other patch replaces the mask. `None` when nothing is left (an emptied object, `null`): the
/// type's mask applies again.
pub fn merge_patch(own: Option<Value>, patch: &Value) -> Option<Value> {
    let merged = merge_value(own.unwrap_or(Value::Null), patch);
    match &merged {
        Value::Null => None,
        Value::Object(members) if members.is_empty() => None,
        _ => Some(merged),
    }
}

fn merge_value(target: Value, patch: &Value) -> Value {
    let Value::Object(members) = patch else {
        return patch.clone();
    };
    let mut target = match target {
        Value::Object(existing) => existing,
        _ => serde_json::Map::new(),
    };
    for (name, value) in members {
        if value.is_null() {
            target.remove(name);
        } else {
            let current = target.remove(name).unwrap_or(Value::Null);
            target.insert(name.clone(), merge_value(current, value));
        }
    }
    Value::Object(target)
}

/// What a token's own mask is sealed for: the purpose of its additional data.
const MASK_PURPOSE: &str = "token-mask";

/// Seals a token's own mask like its data: under the tenant's data key, bound to the tenant and
/// the token, so a mask moved to another token in the database does not open.
pub fn seal_mask(
    key: &crate::crypto::DataKey,
    tenant: crate::ids::TenantId,
    token: &crate::ids::TokenId,
    mask: &Value,
) -> Result<Vec<u8>, crate::error::VaultError> {
    let text = serde_json::to_vec(mask).map_err(|e| {
        crate::error::StoreError::Backend(format!("serialising a token's mask: {e}"))
    })?;
    Ok(key.seal_record(tenant, MASK_PURPOSE, token.to_string().as_bytes(), &text)?)
}

/// A token's sealed mask sealed again under its tenant's current data-key version; `None`
/// when it already is (docs/operations.md, "Rotating data keys").
pub fn reseal_mask(
    key: &crate::crypto::DataKey,
    tenant: crate::ids::TenantId,
    token: &crate::ids::TokenId,
    sealed: &[u8],
) -> Result<Option<Vec<u8>>, crate::crypto::CryptoError> {
    key.reseal_record(tenant, MASK_PURPOSE, token.to_string().as_bytes(), sealed)
}

/// Opens what [`seal_mask`] sealed.
pub fn open_mask(
    key: &crate::crypto::DataKey,
    tenant: crate::ids::TenantId,
    token: &crate::ids::TokenId,
    sealed: &[u8],
) -> Result<Value, crate::error::VaultError> {
    let text = key.open_record(tenant, MASK_PURPOSE, token.to_string().as_bytes(), sealed)?;
    serde_json::from_slice(&text).map_err(|_| {
        crate::error::StoreError::Corrupt(format!("token {token}'s mask is not JSON")).into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_masks_are_basis_theorys() {
        let card = json!({"number": "4242424242424242", "expiration_month": 12,
            "expiration_year": 2030, "cvc": "123"});
        assert_eq!(
            masked(TokenType::Card, None, &card),
            Some(json!({"number": "XXXXXXXXXXXX4242", "expiration_month": 12,
                "expiration_year": 2030}))
        );
        let bank = json!({"routing_number": "021000021", "account_number": "1234567890"});
        assert_eq!(
            masked(TokenType::Bank, None, &bank),
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
            assert_eq!(masked(t, None, &json!(data)), Some(json!(shown)), "{t:?}");
        }
        assert_eq!(masked(TokenType::Token, None, &json!("secret")), None);
    }

    #[test]
    fn a_card_without_an_expiry_shows_null_there() {
        let card = json!({"number": "4242424242424242"});
        assert_eq!(
            masked(TokenType::Card, None, &card),
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
        assert_eq!(masked(TokenType::Card, None, &data), None);
        assert_eq!(render_mask(&json!("{{ data | nope }}"), &json!("x")), None);
    }

    #[test]
    fn a_tokens_own_mask_wins_and_is_checked_over_its_data() {
        let data = json!({"number": "4242424242424242", "cvc": "123"});
        let own = json!({"last4": "{{ data.number | last4 }}"});
        assert_eq!(
            masked(TokenType::Card, Some(&own), &data),
            Some(json!({"last4": "4242"}))
        );
        let mut errors = ValidationErrors::new();
        validate_mask(&own, &data, &mut errors);
        assert!(errors.is_empty());
        for (bad, at) in [
            (json!({"n": "{{ data.number | nope }}"}), "mask.n"),
            (json!(["{{ data"]), "mask[0]"),
            (json!("x".repeat(MAX_MASK_BYTES)), "mask"),
            (
                json!([[[[[[[[["{{ data }}"]]]]]]]]]),
                "mask[0][0][0][0][0][0][0][0]",
            ),
        ] {
            let mut errors = ValidationErrors::new();
            validate_mask(&bad, &data, &mut errors);
            assert!(
                errors.fields().contains_key(at),
                "{bad}: {:?}",
                errors.fields()
            );
        }
        let many: Vec<Value> = (0..=MAX_MASK_TEMPLATES)
            .map(|_| json!("{{ data.cvc }}"))
            .collect();
        let mut errors = ValidationErrors::new();
        validate_mask(&json!(many), &data, &mut errors);
        assert!(errors.fields().contains_key("mask"));
    }

    #[test]
    fn whole_fields_name_what_a_mask_shows_entire() {
        let data = json!({"number": "4242424242424242", "cvc": "123", "name": {"first": "Jo"}});
        let whole = json!({"n": "{{ data.number }}", "c": "{{ data.cvc | reveal_last: 1 }}",
            "f": "{{ data.name.first }}", "literal": "123"});
        assert_eq!(
            whole_fields(&whole, &data),
            vec!["data.number", "data.name.first"]
        );
        assert!(whole_fields(&json!("{{ data.number | last4 }}"), &data).is_empty());
        assert_eq!(
            whole_fields(&json!("{{ data }}"), &json!("123-45-6789")),
            vec!["data"]
        );
    }

    #[test]
    fn a_mask_is_merge_patched_as_rfc_7396_says() {
        let own = json!({"name": {"first": "{{ data.first }}", "last": "{{ data.last }}"},
            "kind": "person"});
        assert_eq!(
            merge_patch(
                Some(own.clone()),
                &json!({"name": {"last": null}, "ssn": "x"})
            ),
            Some(json!({"name": {"first": "{{ data.first }}"}, "kind": "person", "ssn": "x"}))
        );
        assert_eq!(
            merge_patch(Some(own.clone()), &json!("{{ data | last4 }}")),
            Some(json!("{{ data | last4 }}")),
            "not an object: replaces"
        );
        assert_eq!(
            merge_patch(None, &json!({"a": "x", "b": null})),
            Some(json!({"a": "x"}))
        );
        assert_eq!(
            merge_patch(Some(json!({"a": "x"})), &json!({"a": null})),
            None
        );
    }
}
