//! The token forms: create (`POST /tokens`'s body) and edit (`PATCH /tokens/{id}`'s merge
//! patch of metadata and expiry).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use tessera_domain::{NewToken, Secret, Token, TokenPatch, ValidationErrors};

use super::{from_json, lines, pairs};
use crate::form::Form;

/// The create form as submitted (kept to show it again with its problems). The data is held
/// as a secret; of it, only the fields in [`SHOWN_AGAIN`] are shown again with a refused form
/// (the card number, the CVC, the account number and free data are asked for anew).
#[derive(Default)]
pub(crate) struct NewTokenForm {
    pub(crate) token_type: String,
    pub(crate) data_is_json: bool,
    pub(crate) metadata: String,
    pub(crate) container: String,
    pub(crate) expires_at: String,
    /// The data fields named in [`SHOWN_AGAIN`], as typed.
    kept: BTreeMap<&'static str, String>,
    data: Secret<Value>,
}

impl std::fmt::Debug for NewTokenForm {
    // Not derived: no value of the token's data, kept fields included, reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewTokenForm")
            .field("token_type", &self.token_type)
            .field("data_is_json", &self.data_is_json)
            .field("metadata", &self.metadata)
            .field("container", &self.container)
            .field("expires_at", &self.expires_at)
            .field("kept", &self.kept.keys().collect::<Vec<_>>())
            .field("data", &self.data)
            .finish()
    }
}

/// The data fields a refused form shows again: never a card or account number, a CVC or a
/// generic token's data (docs/console.md, "Tokens").
pub(crate) const SHOWN_AGAIN: [&str; 3] = ["expiration_month", "expiration_year", "routing_number"];

/// Names of the create form's data fields, per type, as the API names them under `data`.
pub(crate) const CARD_FIELDS: [(&str, &str); 4] = [
    ("number", "Card number"),
    ("expiration_month", "Expiration month"),
    ("expiration_year", "Expiration year"),
    ("cvc", "CVC"),
];
/// The bank account's fields.
pub(crate) const BANK_FIELDS: [(&str, &str); 2] = [
    ("routing_number", "Routing number"),
    ("account_number", "Account number"),
];

/// A card number as people type it (`4111 1111 1111 1111`, `4111-1111-…`): spaces and dashes
/// removed. Anything else is left for the API's validation to word.
pub(crate) fn card_number(raw: &str) -> String {
    raw.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect()
}

/// A number when the text is one (expiration month and year are integers in the API), else
/// the text, for the API's validation to word the problem.
fn number_or_text(raw: &str) -> Value {
    raw.parse::<i64>().map_or_else(|_| json!(raw), Value::from)
}

impl NewTokenForm {
    /// Reads the submitted form.
    pub(crate) fn read(form: &Form) -> Self {
        let token_type = form.get("type").to_string();
        let fields: &[(&str, &str)] = match token_type.as_str() {
            "card" => &CARD_FIELDS,
            "bank" => &BANK_FIELDS,
            _ => &[],
        };
        let data = if fields.is_empty() {
            json!(form.get("data"))
        } else {
            let mut object = Map::new();
            for (name, _) in fields {
                if let Some(v) = form.opt(&format!("data.{name}")) {
                    let value = match *name {
                        "expiration_month" | "expiration_year" => number_or_text(v.trim()),
                        "number" => json!(card_number(v)),
                        _ => json!(v),
                    };
                    object.insert((*name).to_string(), value);
                }
            }
            Value::Object(object)
        };
        let kept = SHOWN_AGAIN
            .into_iter()
            .filter(|name| fields.iter().any(|(field, _)| field == name))
            .filter_map(|name| Some((name, form.opt(&format!("data.{name}"))?.to_string())))
            .collect();
        Self {
            kept,
            token_type,
            data_is_json: form.checked("data_is_json"),
            metadata: form.get("metadata").to_string(),
            container: form.get("container").trim().to_string(),
            expires_at: form.get("expires_at").trim().to_string(),
            data: Secret::new(data),
        }
    }

    /// What was typed in the data field `name`, when it is one shown again ([`SHOWN_AGAIN`]);
    /// else empty.
    pub(crate) fn kept(&self, name: &str) -> &str {
        self.kept.get(name).map_or("", String::as_str)
    }

    /// The API body, deserialised as [`NewToken`].
    pub(crate) fn to_input(&self) -> Result<NewToken, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let data = match (self.data.expose(), self.data_is_json) {
            (Value::String(text), true) => match serde_json::from_str::<Value>(text) {
                Ok(v) => v,
                Err(e) => {
                    errors.add("data", format!("is not valid JSON: {e}"));
                    Value::Null
                }
            },
            (Value::String(text), false) if text.is_empty() => Value::Null,
            (other, _) => other.clone(),
        };
        let metadata = pairs(&self.metadata, "metadata", &mut errors);
        errors.into_result()?;
        let mut body = json!({"type": self.token_type, "data": data, "metadata": metadata});
        if !self.container.is_empty() {
            body["containers"] = json!([self.container]);
        }
        if !self.expires_at.is_empty() {
            body["expires_at"] = json!(self.expires_at);
        }
        from_json(body)
    }
}

/// The edit form: metadata as `key=value` lines and the expiry, with the values the page
/// showed (hidden fields), from which the merge patch is computed: only what changed is sent,
/// so an unchanged expiry needs no `token:delete`.
#[derive(Debug, Default)]
pub(crate) struct EditTokenForm {
    pub(crate) metadata: String,
    pub(crate) expires_at: String,
    was_metadata: String,
    was_expires_at: String,
}

impl EditTokenForm {
    /// The form of `token` as it is.
    pub(crate) fn of(token: &Token) -> Self {
        let metadata = lines(&token.metadata);
        let expires_at = token
            .expires_at
            .map(tessera_domain::timestamp::format)
            .unwrap_or_default();
        Self {
            was_metadata: metadata.clone(),
            was_expires_at: expires_at.clone(),
            metadata,
            expires_at,
        }
    }

    /// Reads the submitted form.
    pub(crate) fn read(form: &Form) -> Self {
        Self {
            metadata: form.get("metadata").to_string(),
            expires_at: form.get("expires_at").trim().to_string(),
            was_metadata: form.get("was_metadata").to_string(),
            was_expires_at: form.get("was_expires_at").trim().to_string(),
        }
    }

    /// The hidden fields that carry what the page showed.
    pub(crate) fn hidden(&self) -> [(&'static str, &str); 2] {
        [
            ("was_metadata", &self.was_metadata),
            ("was_expires_at", &self.was_expires_at),
        ]
    }

    /// The merge patch from what was shown to what was submitted.
    pub(crate) fn to_patch(&self) -> Result<TokenPatch, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let before = pairs(&self.was_metadata, "metadata", &mut ValidationErrors::new());
        let after = pairs(&self.metadata, "metadata", &mut errors);
        errors.into_result()?;
        let mut changes = Map::new();
        for key in before.keys().filter(|k| !after.contains_key(*k)) {
            changes.insert(key.clone(), Value::Null);
        }
        for (key, value) in &after {
            if before.get(key) != Some(value) {
                changes.insert(key.clone(), json!(value));
            }
        }
        let mut body = Map::new();
        if !changes.is_empty() {
            body.insert("metadata".into(), Value::Object(changes));
        }
        if self.expires_at != self.was_expires_at {
            let expiry = if self.expires_at.is_empty() {
                Value::Null
            } else {
                json!(self.expires_at)
            };
            body.insert("expires_at".into(), expiry);
        }
        from_json(Value::Object(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_form_is_the_api_body() {
        let form = Form::parse(
            b"type=card&data.number=4242424242424242&data.expiration_month=12&data.expiration_year=2030&data.cvc=&metadata=a%3D1&container=%2Fpci%2F",
        );
        let input = NewTokenForm::read(&form).to_input().expect("valid shape");
        let data = input.data.as_ref().expect("data").expose().clone();
        assert_eq!(
            data,
            json!({"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030})
        );
        assert_eq!(input.containers, Some(vec!["/pci/".to_string()]));
        assert!(!format!("{:?}", NewTokenForm::read(&form)).contains("4242"));
    }

    #[test]
    fn a_card_number_may_hold_spaces_and_dashes() {
        assert_eq!(card_number("4111 1111 1111 1111"), "4111111111111111");
        assert_eq!(card_number(" 4111-1111-1111-1111 "), "4111111111111111");
        assert_eq!(card_number("4111\t1111"), "41111111");
        assert_eq!(card_number("4111x"), "4111x", "the API words the rest");
        let form = Form::parse(
            b"type=card&data.number=4242+4242-4242+4242&data.expiration_month=+12&data.expiration_year=2030&data.cvc=737",
        );
        let input = NewTokenForm::read(&form).to_input().expect("valid shape");
        let data = input.data.as_ref().expect("data").expose().clone();
        assert_eq!(data["number"], json!("4242424242424242"));
        assert_eq!(data["expiration_month"], json!(12));
    }

    #[test]
    fn only_month_year_and_routing_number_are_kept() {
        let card = NewTokenForm::read(&Form::parse(
            b"type=card&data.number=4242424242424242&data.expiration_month=13&data.expiration_year=2030&data.cvc=737",
        ));
        assert_eq!(card.kept("expiration_month"), "13");
        assert_eq!(card.kept("expiration_year"), "2030");
        assert_eq!(card.kept("number"), "");
        assert_eq!(card.kept("cvc"), "");
        let debug = format!("{card:?}");
        assert!(!debug.contains("4242") && !debug.contains("737") && !debug.contains("2030"));
        let bank = NewTokenForm::read(&Form::parse(
            b"type=bank&data.routing_number=011000015&data.account_number=000123456789",
        ));
        assert_eq!(bank.kept("routing_number"), "011000015");
        assert_eq!(bank.kept("account_number"), "");
        let other = NewTokenForm::read(&Form::parse(
            b"type=token&data=secret&data.expiration_month=1",
        ));
        assert_eq!(
            other.kept("expiration_month"),
            "",
            "not a field of this type"
        );
    }

    #[test]
    fn generic_data_is_text_or_json() {
        let text = NewTokenForm::read(&Form::parse(b"type=token&data=%7B%22a%22%3A1%7D"));
        assert_eq!(
            text.to_input().expect("ok").data.expect("data").expose(),
            &json!("{\"a\":1}")
        );
        let parsed = NewTokenForm::read(&Form::parse(
            b"type=token&data_is_json=on&data=%7B%22a%22%3A1%7D",
        ));
        assert_eq!(
            parsed.to_input().expect("ok").data.expect("data").expose(),
            &json!({"a": 1})
        );
        let bad = NewTokenForm::read(&Form::parse(b"type=token&data_is_json=on&data=%7B"));
        assert!(bad
            .to_input()
            .expect_err("bad")
            .fields()
            .contains_key("data"));
    }

    #[test]
    fn the_patch_holds_only_changes() {
        let form = Form::parse(
            b"metadata=a%3D1%0Ac%3D3&expires_at=&was_metadata=a%3D1%0Ab%3D2&was_expires_at=",
        );
        let patch = EditTokenForm::read(&form).to_patch().expect("patch");
        let changes = patch.metadata.expect("given").expect("object");
        assert_eq!(changes.get("b"), Some(&None), "removed");
        assert_eq!(changes.get("c"), Some(&Some("3".to_string())));
        assert!(!changes.contains_key("a"), "unchanged");
        assert!(patch.expires_at.is_none(), "unchanged expiry is not sent");
        let cleared = EditTokenForm::read(&Form::parse(
            b"metadata=&expires_at=&was_metadata=&was_expires_at=2030-01-01T00%3A00%3A00Z",
        ))
        .to_patch()
        .expect("patch");
        assert_eq!(cleared.expires_at, Some(None));
    }
}
