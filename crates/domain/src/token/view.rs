//! A token as read back: with its data decrypted ([`Token`]), and as shown ([`TokenView`]).

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::{card_summary::CardSummary, token_type::TokenType};
use crate::{
    binding::Destinations,
    container::Container,
    ids::{ApplicationId, TenantId, TokenId},
    metadata::Metadata,
    secret::Secret,
};

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
    /// Keyed hash of the data (see [`super::fingerprint_input`]), 64 hex digits.
    pub fingerprint: String,
    /// Expiry, if any.
    pub expires_at: Option<OffsetDateTime>,
    /// Where the data may be sent, if bound.
    pub destinations: Option<Destinations>,
    /// The search index templates its create or last update named (`None`: the type's).
    pub search_indexes: Option<Vec<String>>,
    /// The fingerprint expression its create or last update named (`None`: the type's).
    pub fingerprint_expression: Option<String>,
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
    /// within one tenant only. Shown only to callers who may read the token (docs/api.md, "Fingerprints and deduplication"):
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
    /// The templates whose values `data:` search terms find (the type's defaults when its
    /// create named none; `[]`: not searchable by data).
    search_indexes: Vec<String>,
    /// The template whose rendered text is fingerprinted; `null`: the type's own canonical
    /// input (`token`, `card`, `bank`).
    fingerprint_expression: Option<String>,
    /// On the answer to a card's create only: its brand, last four digits and expiry, for
    /// receipts (never the number or the CVC).
    #[serde(skip_serializing_if = "Option::is_none")]
    card: Option<CardSummary>,
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
            search_indexes: super::effective_search_indexes(
                t.token_type,
                t.search_indexes.as_deref(),
            ),
            fingerprint_expression: super::effective_fingerprint_expression(
                t.token_type,
                t.fingerprint_expression.as_deref(),
            ),
            card: None,
        }
    }

    /// The answer to a create: [`TokenView::without_data`], and for a card its display
    /// fields (the caller just sent the card, so they tell it nothing new; an update's
    /// answer never carries them, since `token:update` does not let one read a card).
    pub fn created(t: Token, viewer: &crate::access::Principal) -> Self {
        let card = (t.token_type == TokenType::Card)
            .then(|| CardSummary::of(t.data.expose()))
            .flatten();
        Self {
            card,
            ..Self::without_data(t, viewer)
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
