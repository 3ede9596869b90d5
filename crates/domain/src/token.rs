//! Tokens: a sensitive value (held encrypted), its type, container and metadata.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::{
    binding::Destinations,
    checksum::{aba_valid, luhn_valid},
    container::Container,
    ids::{ApplicationId, TenantId, TokenId},
    metadata::{self, Metadata},
    secret::Secret,
    validation::ValidationErrors,
};

/// The kind of value a token holds; it decides validation and the default container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TokenType {
    /// Any JSON value.
    Token,
    /// A payment card (`number`, `expiration_month`, `expiration_year`, `cvc`).
    Card,
    /// A US bank account (`routing_number`, `account_number`).
    Bank,
}

impl TokenType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenType::Token => "token",
            TokenType::Card => "card",
            TokenType::Bank => "bank",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "token" => Some(TokenType::Token),
            "card" => Some(TokenType::Card),
            "bank" => Some(TokenType::Bank),
            _ => None,
        }
    }

    /// Where a token of this type lives when the caller names no container.
    pub fn default_container(self) -> Container {
        let path = match self {
            TokenType::Token => "/general/high/",
            TokenType::Card => "/pci/high/",
            TokenType::Bank => "/bank/high/",
        };
        Container::parse(path).unwrap_or_else(|_| Container::root())
    }
}

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
}

/// A [`NewToken`] that passed validation.
#[derive(Debug, Clone)]
pub struct ValidToken {
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
}

impl NewToken {
    /// A request for a token of `token_type` holding `data`, with every option left out.
    pub fn new(token_type: TokenType, data: Value) -> Self {
        Self {
            token_type,
            data: Some(Secret::new(data)),
            metadata: None,
            containers: None,
            expires_at: None,
            deduplicate_token: false,
            destinations: None,
        }
    }

    /// Applies SUPPLEMENT §3 (required data, per-type data shape, metadata and container
    /// limits) and the expiry rule, against the current time.
    pub fn validate(self) -> Result<ValidToken, ValidationErrors> {
        self.validate_at(crate::timestamp::now())
    }

    /// [`NewToken::validate`] as of `now`.
    pub fn validate_at(self, now: OffsetDateTime) -> Result<ValidToken, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let expires_at = self
            .expires_at
            .as_deref()
            .and_then(|raw| future_timestamp(raw, now, &mut errors));
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
                token_type: self.token_type,
                data,
                metadata,
                container,
                expires_at,
                deduplicate: self.deduplicate_token,
                destinations,
            }),
            _ => Err(ValidationErrors::single("data", "is required")),
        }
    }
}

/// Checks `data` against the shape its type requires, recording problems under `data…`.
fn validate_data(token_type: TokenType, data: &Value, errors: &mut ValidationErrors) {
    match token_type {
        TokenType::Token => {}
        TokenType::Card => validate_card(data, errors),
        TokenType::Bank => validate_bank(data, errors),
    }
}

/// `raw` as a timestamp after `now`, or a problem recorded under `expires_at`.
fn future_timestamp(
    raw: &str,
    now: OffsetDateTime,
    errors: &mut ValidationErrors,
) -> Option<OffsetDateTime> {
    match crate::timestamp::parse(raw) {
        Some(ts) if ts > now => Some(ts),
        Some(_) => {
            errors.add("expires_at", "must be in the future");
            None
        }
        None => {
            errors.add(
                "expires_at",
                "must be an RFC 3339 timestamp with an offset, e.g. 2030-01-31T12:00:00Z",
            );
            None
        }
    }
}

/// What a token's fingerprint is computed over: the number of a card, routing and account
/// number of a bank account, the canonical JSON of anything else (object keys sorted, no
/// whitespace), prefixed with the type so that no two types' inputs coincide.
pub fn fingerprint_input(token_type: TokenType, data: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(token_type.as_str().as_bytes());
    out.push(0);
    let field = |name: &str| data.get(name).and_then(Value::as_str).unwrap_or_default();
    match token_type {
        TokenType::Card => out.extend_from_slice(field("number").as_bytes()),
        TokenType::Bank => {
            out.extend_from_slice(field("routing_number").as_bytes());
            out.push(0);
            out.extend_from_slice(field("account_number").as_bytes());
        }
        TokenType::Token => canonical_json(data, &mut out),
    }
    out
}

/// Writes `value` as JSON with object keys in byte order and no whitespace (numbers and
/// strings as `serde_json` writes them), so equal data gives equal bytes whatever order its
/// keys arrived in.
pub(crate) fn canonical_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(&Value::String(key.clone()), out);
                out.push(b':');
                canonical_json(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(item, out);
            }
            out.push(b']');
        }
        // Scalars cannot fail to serialise into a Vec.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// `Some(value)` for a field that is present, `null` included (with `#[serde(default)]`, an
/// absent field stays `None`): how a merge patch tells "remove" from "leave alone".
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A JSON merge patch (RFC 7396) of a token: `PATCH /tokens/{id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "metadata": {"customer": "c_43", "obsolete": null},
    "expires_at": "2030-01-31T12:00:00Z"
})))]
#[serde(deny_unknown_fields)]
pub struct TokenPatch {
    /// New data, replacing the old (re-encrypted, validated by the token's type; not `null`).
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    pub data: Option<Option<Secret<Value>>>,
    /// Merged into the metadata: a key set to a string is set, a key set to `null` removed;
    /// `null` for the whole object removes every pair.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<std::collections::BTreeMap<String, Option<String>>>)
    )]
    pub metadata: Option<Option<std::collections::BTreeMap<String, Option<String>>>>,
    /// A new expiry (RFC 3339, in the future), or `null` to never expire.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub expires_at: Option<Option<String>>,
    /// New destination patterns (replacing the old), or `null` to unbind the token.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub destinations: Option<Option<Vec<String>>>,
    /// Immutable: present at all, a 400.
    #[serde(rename = "type", default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    pub token_type: Option<Value>,
    /// Immutable: present at all, a 400.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    pub containers: Option<Value>,
    /// Immutable: present at all, a 400.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    pub id: Option<Value>,
}

/// What a valid [`TokenPatch`] changes; `None` leaves a part alone.
#[derive(Debug, Clone)]
pub struct TokenChanges {
    /// New data.
    pub data: Option<Secret<Value>>,
    /// The whole new metadata.
    pub metadata: Metadata,
    /// The new expiry (`None` inside: never).
    pub expires_at: Option<OffsetDateTime>,
    /// The new binding, when the patch changes it (`Some(None)`: unbound).
    pub destinations: Option<Option<Destinations>>,
}

impl TokenPatch {
    /// Validates the patch against the token it applies to (its type decides the data shape;
    /// the merged metadata must keep SUPPLEMENT §3's limits), as of `now`.
    pub fn apply_to(
        self,
        token_type: TokenType,
        metadata: &Metadata,
        expires_at: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Result<TokenChanges, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        for (field, given) in [
            ("type", self.token_type.is_some()),
            ("containers", self.containers.is_some()),
            ("id", self.id.is_some()),
        ] {
            if given {
                errors.add(field, "cannot be changed");
            }
        }
        let data = match self.data {
            None => None,
            Some(None) => {
                errors.add("data", "cannot be null");
                None
            }
            Some(Some(d)) if d.expose().is_null() => {
                errors.add("data", "cannot be null");
                None
            }
            Some(Some(d)) => {
                validate_data(token_type, d.expose(), &mut errors);
                Some(d)
            }
        };
        let mut merged = metadata.clone();
        match self.metadata {
            None => {}
            Some(None) => merged.clear(),
            Some(Some(patch)) => {
                for (key, value) in patch {
                    match value {
                        Some(v) => {
                            merged.insert(key, v);
                        }
                        None => {
                            merged.remove(&key);
                        }
                    }
                }
            }
        }
        metadata::validate(&merged, &mut errors);
        let expires_at = match self.expires_at {
            None => expires_at,
            Some(None) => None,
            Some(Some(raw)) => future_timestamp(&raw, now, &mut errors),
        };
        let destinations = self
            .destinations
            .map(|d| d.and_then(|raw| Destinations::validate(&raw, "destinations", &mut errors)));
        errors.into_result()?;
        Ok(TokenChanges {
            data,
            metadata: merged,
            expires_at,
            destinations,
        })
    }
}

fn object<'a>(
    data: &'a Value,
    errors: &mut ValidationErrors,
    kind: &str,
) -> Option<&'a Map<String, Value>> {
    let obj = data.as_object();
    if obj.is_none() {
        errors.add("data", format!("must be an object for a {kind} token"));
    }
    obj
}

fn reject_unknown(obj: &Map<String, Value>, known: &[&str], errors: &mut ValidationErrors) {
    for key in obj.keys().filter(|k| !known.contains(&k.as_str())) {
        errors.add(format!("data.{key}"), "is not a known field");
    }
}

fn digits_between(value: Option<&Value>, min: usize, max: usize) -> Result<Option<&str>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s))
            if (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Ok(Some(s))
        }
        Some(Value::String(_)) if min == max => Err(format!("must be a string of {min} digits")),
        _ => Err(format!("must be a string of {min} to {max} digits")),
    }
}

fn validate_card(data: &Value, errors: &mut ValidationErrors) {
    let Some(obj) = object(data, errors, "card") else {
        return;
    };
    reject_unknown(
        obj,
        &["number", "expiration_month", "expiration_year", "cvc"],
        errors,
    );
    match digits_between(obj.get("number"), 12, 19) {
        Ok(Some(n)) if !luhn_valid(n) => errors.add("data.number", "fails the Luhn check"),
        Ok(Some(_)) => {}
        Ok(None) => errors.add("data.number", "is required"),
        Err(msg) => errors.add("data.number", msg),
    }
    let month = obj.get("expiration_month").filter(|v| !v.is_null());
    let year = obj.get("expiration_year").filter(|v| !v.is_null());
    if let Some(m) = month {
        if !m.as_i64().is_some_and(|m| (1..=12).contains(&m)) {
            errors.add("data.expiration_month", "must be an integer from 1 to 12");
        }
    }
    if let Some(y) = year {
        if !y.as_i64().is_some_and(|y| (1000..=9999).contains(&y)) {
            errors.add("data.expiration_year", "must be a four-digit integer");
        }
    }
    match (month, year) {
        (Some(_), None) => errors.add("data.expiration_year", "is required with expiration_month"),
        (None, Some(_)) => errors.add("data.expiration_month", "is required with expiration_year"),
        _ => {}
    }
    if let Err(msg) = digits_between(obj.get("cvc"), 3, 4) {
        errors.add("data.cvc", msg);
    }
}

fn validate_bank(data: &Value, errors: &mut ValidationErrors) {
    let Some(obj) = object(data, errors, "bank") else {
        return;
    };
    reject_unknown(obj, &["routing_number", "account_number"], errors);
    match digits_between(obj.get("routing_number"), 9, 9) {
        Ok(Some(r)) if !aba_valid(r) => errors.add("data.routing_number", "fails the ABA checksum"),
        Ok(Some(_)) => {}
        Ok(None) => errors.add("data.routing_number", "is required"),
        Err(msg) => errors.add("data.routing_number", msg),
    }
    match digits_between(obj.get("account_number"), 1, 17) {
        Ok(Some(_)) => {}
        Ok(None) => errors.add("data.account_number", "is required"),
        Err(msg) => errors.add("data.account_number", msg),
    }
}

/// A token with its data decrypted.
#[derive(Debug, Clone)]
pub struct Token {
    /// Identifier.
    pub id: TokenId,
    /// Owning tenant.
    pub tenant_id: TenantId,
    /// Type.
    pub token_type: TokenType,
    /// The sensitive value.
    pub data: Secret<Value>,
    /// Non-sensitive pairs.
    pub metadata: Metadata,
    /// Container.
    pub container: Container,
    /// Creating application.
    pub created_by: ApplicationId,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: ApplicationId,
    /// Last modification time.
    pub modified_at: OffsetDateTime,
    /// Keyed hash of the data (see [`fingerprint_input`]), 64 hex digits.
    pub fingerprint: String,
    /// Expiry, if any.
    pub expires_at: Option<OffsetDateTime>,
    /// Where the data may be sent, if bound.
    pub destinations: Option<Destinations>,
}

// One shape for API responses, `token:` expressions and `req.svc` results; `Debug` prints the
// data as `***` (it is a `Secret`).
/// A token. `data` is present only on reads and lists.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenView {
    id: TokenId,
    tenant_id: TenantId,
    #[serde(rename = "type")]
    token_type: TokenType,
    /// The sensitive value, on reads and lists only.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::secret::exposed_option"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    data: Option<Secret<Value>>,
    containers: Vec<String>,
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = std::collections::BTreeMap<String, String>)
    )]
    metadata: Metadata,
    created_by: ApplicationId,
    #[serde(with = "crate::timestamp::serde_rfc3339")]
    created_at: OffsetDateTime,
    modified_by: ApplicationId,
    #[serde(with = "crate::timestamp::serde_rfc3339")]
    modified_at: OffsetDateTime,
    /// HMAC-SHA-256 of the data under a per-tenant key, hex: equal data, equal fingerprint,
    /// within one tenant only. Shown only to callers who may read the token (SUPPLEMENT §9):
    /// to anyone else it would tell which of their guesses equals a stored value.
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprint: Option<String>,
    /// When the token expires; `null`: never.
    #[serde(with = "crate::timestamp::serde_rfc3339::option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    expires_at: Option<OffsetDateTime>,
    /// The hosts the data may be sent to through the gateway; `null`: unbound.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    destinations: Option<Destinations>,
}

impl TokenView {
    fn build(t: Token, with_data: bool, with_fingerprint: bool) -> Self {
        Self {
            id: t.id,
            tenant_id: t.tenant_id,
            token_type: t.token_type,
            data: with_data.then_some(t.data),
            containers: vec![t.container.as_str().to_string()],
            metadata: t.metadata,
            created_by: t.created_by,
            created_at: t.created_at,
            modified_by: t.modified_by,
            modified_at: t.modified_at,
            fingerprint: with_fingerprint.then_some(t.fingerprint),
            expires_at: t.expires_at,
            destinations: t.destinations,
        }
    }

    /// Including the sensitive data and the fingerprint (read, list and search responses: the
    /// caller holds `token:read` on the token).
    pub fn with_data(t: Token) -> Self {
        Self::build(t, true, true)
    }

    /// Without the sensitive data (create and update responses, search without data); the
    /// fingerprint only when `viewer` may read the token.
    pub fn without_data(t: Token, viewer: &crate::access::Principal) -> Self {
        let readable = viewer.may_see(crate::permission::Permission::TokenRead, &t.container);
        Self::build(t, false, readable)
    }

    /// The view as a JSON value (for `token:` expressions and `req.svc`), held as a secret
    /// when it carries data.
    pub fn to_json(&self) -> Secret<Value> {
        // Serialising this struct of strings, maps and a JSON value cannot fail.
        Secret::new(serde_json::to_value(self).unwrap_or(Value::Null))
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
