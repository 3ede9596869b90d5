//! What a caller supplies to create a token, and its validation.

use serde::Deserialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::{data::validate_data, token_type::TokenType};
use crate::{
    binding::Destinations,
    container::Container,
    ids::TokenId,
    metadata::{self, Metadata},
    secret::Secret,
    token::{IdChoice, Indexing},
    validation::ValidationErrors,
};

/// What a caller supplies to create a token.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "type": "card",
    "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030,
             "cvc": "123"},
    "metadata": {"customer": "c_42"},
    "containers": ["/pci/high/"]
})))]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// The token's id, chosen by the caller and unique in the tenant (409 when taken): 3–400
    /// characters without whitespace or any of `# / \ + ? [ ] | & = % < > { } ^`, not
    /// starting with `token:`, `config:` or `token_intent:` (a hyphenated UUID is stored in
    /// lower case). An id holding `{{` is an alias template over `data`
    /// (`{{ data | alias_preserve_format: 0, 4 }}`), drawn again when taken. For importing
    /// tokens with the ids another vault gave them; only `private` and `management` keys may
    /// choose ids or templates. Generated when absent.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub id: Option<String>,
    /// Token type.
    #[serde(rename = "type")]
    pub token_type: TokenType,
    /// The sensitive value; required, any JSON value but `null`. For `card` an object with
    /// `number`, `expiration_month`, `expiration_year`, `cvc`; for `bank` an object with
    /// `routing_number` and `account_number`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Value, required = true))]
    pub data: Option<Secret<Value>>,
    /// Non-sensitive pairs: at most 100, keys up to 200 characters, values up to 500.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<std::collections::BTreeMap<String, String>>)
    )]
    pub metadata: Option<Metadata>,
    /// Zero or one container path; the default depends on the type.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(max_items = 1, inline, value_type = Option<Vec<crate::container::Container>>)
    )]
    pub containers: Option<Vec<String>>,
    /// When the token expires: RFC 3339, in the future. Never when absent. Once past, the
    /// token answers everywhere as an unknown token, and a sweep deletes it.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub expires_at: Option<String>,
    /// With `true`, a live token of the same tenant, type, container and fingerprint is
    /// returned (200) instead of creating a new one (201).
    #[serde(default)]
    pub deduplicate_token: bool,
    /// The hosts the data may be sent to through the gateway: 1–20 patterns (`api.stripe.com`,
    /// `*.openai.com`, an IP literal, each optionally with `:port`). Unbound when absent.
    #[serde(default)]
    pub destinations: Option<Vec<String>>,
    /// Up to 10 templates over `data` (`{{ data | last4 }}`) whose values `data:` search terms
    /// find exactly; each must render a non-empty value. The type's defaults when absent.
    #[serde(default)]
    pub search_indexes: Option<Vec<String>>,
    /// A template over `data` and `metadata` whose rendered text is fingerprinted (and so
    /// decides deduplication); the type's default when absent.
    #[serde(default)]
    pub fingerprint_expression: Option<String>,
    /// What the `mask` transform shows of this token: any JSON value whose strings are
    /// templates over `data` (`{"number": "{{ data.number | reveal_last: 4 }}"}`), rendered
    /// when read; the type's default mask when absent or `null` (docs/api.md, "Masks").
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    pub mask: Option<Value>,
}

/// A [`NewToken`] that passed validation.
#[derive(Debug, Clone)]
pub struct ValidToken {
    /// How its id is chosen.
    pub id: IdChoice,
    /// Token type.
    pub token_type: TokenType,
    /// The sensitive value.
    pub data: Secret<Value>,
    /// Non-sensitive pairs.
    pub metadata: Metadata,
    /// Normalised container.
    pub container: Container,
    /// Expiry, if any (in the future when validated).
    pub expires_at: Option<OffsetDateTime>,
    /// Whether an existing equal token should be answered instead.
    pub deduplicate: bool,
    /// Where the data may be sent, if bound.
    pub destinations: Option<Destinations>,
    /// Its search indexes and fingerprint expression, rendered.
    pub indexing: Indexing,
    /// Its own mask, checked over its data (`None`: its type's).
    pub mask: Option<Value>,
}

impl NewToken {
    /// A request for a token of `token_type` holding `data`, with every option left out.
    pub fn new(token_type: TokenType, data: Value) -> Self {
        Self {
            id: None,
            token_type,
            data: Some(Secret::new(data)),
            metadata: None,
            containers: None,
            expires_at: None,
            deduplicate_token: false,
            destinations: None,
            search_indexes: None,
            fingerprint_expression: None,
            mask: None,
        }
    }

    /// The id the caller chose itself (not an alias template), when it is a valid one.
    pub fn chosen_id(&self) -> Option<TokenId> {
        let raw = self.id.as_deref()?;
        if tessera_expressions::Template::is_template(raw) {
            return None;
        }
        raw.parse().ok()
    }

    /// Whether the caller chose the token's id itself (not an alias template).
    pub fn chooses_id(&self) -> bool {
        self.chosen_id().is_some()
    }

    /// Applies docs/api.md, "Tokens" (required data, per-type data shape, metadata and container
    /// limits) and the expiry rule, against the current time.
    pub fn validate(self) -> Result<ValidToken, ValidationErrors> {
        self.validate_at(crate::timestamp::now())
    }

    /// [`NewToken::validate`] as of `now`.
    pub fn validate_at(self, now: OffsetDateTime) -> Result<ValidToken, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        // An alias renders over a card without its CVC: an id outlives the CVC.
        let rendered_from = self
            .data
            .as_ref()
            .map(|d| super::cvc::without_cvc(self.token_type, d.expose()));
        let id = IdChoice::read(self.id.as_deref(), rendered_from.as_deref(), &mut errors);
        let expires_at = self
            .expires_at
            .as_deref()
            .and_then(|raw| crate::timestamp::future_expiry(raw, now, &mut errors));
        let data = match self.data {
            Some(d) if !d.expose().is_null() => Some(d),
            _ => {
                errors.add("data", "is required");
                None
            }
        };
        if let Some(d) = &data {
            validate_data(self.token_type, d.expose(), &mut errors);
        }
        let metadata = self.metadata.unwrap_or_default();
        metadata::validate(&metadata, &mut errors);
        // Rendered over data that passed its type's checks only: a template's problem is
        // then about the template.
        let indexing = match &data {
            Some(d) if errors.is_empty() => Indexing::read(
                self.token_type,
                self.search_indexes,
                self.fingerprint_expression,
                d.expose(),
                &metadata,
                &mut errors,
            ),
            _ => Indexing::default(),
        };
        let mask = self.mask.filter(|m| !m.is_null());
        if let (Some(mask), Some(d)) = (&mask, &data) {
            super::mask::validate_mask(mask, d.expose(), &mut errors);
        }
        let destinations = self
            .destinations
            .as_deref()
            .and_then(|raw| Destinations::validate(raw, "destinations", &mut errors));
        let container = match self.containers.as_deref() {
            None | Some([]) => Some(self.token_type.default_container()),
            Some([one]) => match Container::parse_for_token(one) {
                Ok(c) => Some(c),
                Err(e) => {
                    errors.add("containers[0]", e.to_string());
                    None
                }
            },
            Some(_) => {
                errors.add("containers", "must hold at most one container");
                None
            }
        };
        errors.into_result()?;
        match (data, container) {
            (Some(data), Some(container)) => Ok(ValidToken {
                id,
                token_type: self.token_type,
                data,
                metadata,
                container,
                expires_at,
                deduplicate: self.deduplicate_token,
                destinations,
                indexing,
                mask,
            }),
            _ => Err(ValidationErrors::single("data", "is required")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn new(token_type: TokenType, data: Value) -> NewToken {
        NewToken::new(token_type, data)
    }

    fn fields(r: Result<ValidToken, ValidationErrors>) -> Vec<String> {
        r.map(|_| vec![])
            .unwrap_or_else(|e| e.fields().keys().cloned().collect())
    }

    #[test]
    fn any_json_but_null_is_valid_token_data() {
        for d in [json!("s"), json!(1), json!({"a": [1]}), json!(false)] {
            let v = new(TokenType::Token, d).validate().expect("valid");
            assert_eq!(v.container.as_str(), "/general/high/");
        }
        assert_eq!(
            fields(new(TokenType::Token, Value::Null).validate()),
            vec!["data"]
        );
        let missing = NewToken {
            data: None,
            ..new(TokenType::Token, json!(1))
        };
        assert_eq!(fields(missing.validate()), vec!["data"]);
    }

    #[test]
    fn a_chosen_id_is_any_id_and_a_uuid_in_lower_case() {
        let with = |id: &str| NewToken {
            id: Some(id.to_string()),
            ..new(TokenType::Token, json!("abcdef"))
        };
        let chosen = |id: &str| match with(id).validate().expect("valid").id {
            IdChoice::Chosen(id) => id.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            chosen("0B6C3BD4-5C0E-4E5C-8F41-7F5A7D4E2A10"),
            "0b6c3bd4-5c0e-4e5c-8f41-7f5a7d4e2a10",
            "stored in lower case"
        );
        assert_eq!(chosen("tok_123"), "tok_123");
        assert_eq!(
            chosen("0b6c3bd45c0e4e5c8f417f5a7d4e2a10"),
            "0b6c3bd45c0e4e5c8f417f5a7d4e2a10"
        );
        assert!(matches!(
            with("{{ data | alias_preserve_format }}")
                .validate()
                .expect("alias")
                .id,
            IdChoice::Alias { .. }
        ));
        for bad in [
            "",
            "ab",
            "a/b",
            "00000000-0000-0000-0000-000000000000",
            "{{ data | nope }}",
        ] {
            assert_eq!(fields(with(bad).validate()), vec!["id"], "{bad}");
        }
        assert!(matches!(
            new(TokenType::Token, json!(1)).validate().expect("ok").id,
            IdChoice::Generated
        ));
    }

    #[test]
    fn cards_are_checked() {
        let ok = json!({"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030, "cvc": "123"});
        let v = new(TokenType::Card, ok).validate().expect("valid card");
        assert_eq!(v.container.as_str(), "/pci/high/");
        assert!(new(TokenType::Card, json!({"number": "4242424242424242"}))
            .validate()
            .is_ok());
        assert_eq!(
            fields(new(TokenType::Card, json!({"number": "4242424242424241"})).validate()),
            vec!["data.number"]
        );
        assert_eq!(
            fields(new(TokenType::Card, json!({"number": 4242424242424242u64})).validate()),
            vec!["data.number"]
        );
        assert_eq!(
            fields(new(TokenType::Card, json!({"number": "42424242424"})).validate()),
            vec!["data.number"]
        );
        assert_eq!(
            fields(new(TokenType::Card, json!({})).validate()),
            vec!["data.number"]
        );
        assert_eq!(
            fields(new(TokenType::Card, json!({"number": "4242424242424242", "expiration_month": 13, "expiration_year": 30, "cvc": "12"})).validate()),
            vec!["data.cvc", "data.expiration_month", "data.expiration_year"]
        );
        assert_eq!(
            fields(
                new(
                    TokenType::Card,
                    json!({"number": "4242424242424242", "expiration_month": 1})
                )
                .validate()
            ),
            vec!["data.expiration_year"]
        );
        assert_eq!(
            fields(
                new(
                    TokenType::Card,
                    json!({"number": "4242424242424242", "pin": "1"})
                )
                .validate()
            ),
            vec!["data.pin"]
        );
        assert_eq!(
            fields(new(TokenType::Card, json!("4242424242424242")).validate()),
            vec!["data"]
        );
    }

    #[test]
    fn banks_are_checked() {
        let ok = json!({"routing_number": "011000015", "account_number": "12345678901234567"});
        assert_eq!(
            new(TokenType::Bank, ok)
                .validate()
                .expect("valid")
                .container
                .as_str(),
            "/bank/high/"
        );
        assert_eq!(
            fields(
                new(
                    TokenType::Bank,
                    json!({"routing_number": "011000016", "account_number": "123456789012345678"})
                )
                .validate()
            ),
            vec!["data.account_number", "data.routing_number"]
        );
        assert_eq!(
            fields(new(TokenType::Bank, json!({"account_number": "1"})).validate()),
            vec!["data.routing_number"]
        );
    }

    #[test]
    fn containers_and_metadata_are_checked() {
        let mut t = new(TokenType::Token, json!(1));
        t.containers = Some(vec!["/Custom/Path/".into()]);
        assert_eq!(
            t.clone().validate().expect("valid").container.as_str(),
            "/custom/path/"
        );
        t.containers = Some(vec!["/a/".into(), "/b/".into()]);
        assert_eq!(fields(t.clone().validate()), vec!["containers"]);
        t.containers = Some(vec!["nope".into()]);
        assert_eq!(fields(t.clone().validate()), vec!["containers[0]"]);
        t.containers = Some(vec![]);
        t.metadata = Some(Metadata::from([("k".into(), "v".repeat(501))]));
        assert_eq!(fields(t.validate()), vec!["metadata.k"]);
    }

    #[test]
    fn unknown_fields_and_bad_types_fail_to_parse() {
        assert!(serde_json::from_str::<NewToken>(r#"{"type":"token","data":1,"x":1}"#).is_err());
        assert!(serde_json::from_str::<NewToken>(r#"{"type":"nope","data":1}"#).is_err());
        assert!(serde_json::from_str::<NewToken>(r#"{"data":1}"#).is_err());
        assert!(serde_json::from_str::<NewToken>(
            r#"{"type":"token","data":1,"metadata":{"a":1}}"#
        )
        .is_err());
    }
}
