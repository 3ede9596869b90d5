//! A token as read back: with its data decrypted ([`Token`]), and its JSON shape as every
//! answer shows it ([`TokenView`]: the management API, `req.svc` and detokenization's whole
//! token object).

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::{card_summary::CardSummary, mask::masked, token_type::TokenType};
use crate::{
    access::Principal,
    binding::Destinations,
    container::Container,
    data_transform::DataTransform,
    ids::{ApplicationId, TenantId, TokenId},
    metadata::Metadata,
    permission::Permission,
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
    /// Its own mask (`None`: its type's), decrypted (docs/api.md, "Masks").
    pub mask: Option<Value>,
}

// One shape for API responses, `token:` expressions and `req.svc` results; `Debug` prints the
// data as `***` (it is a `Secret`).
/// A token. `data` is present on reads, lists and searches as the caller's transform shows
/// it, and on writes' answers under a `mask` transform (docs/api.md, "Transforms").
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenView {
    id: TokenId,
    tenant_id: TenantId,
    #[serde(rename = "type")]
    token_type: TokenType,
    /// The data as the caller's transform shows it: the plaintext (`reveal`), the rendered
    /// mask (`mask`), or absent (`redact`, a masked token without a mask, a write's answer).
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
    /// The token's own mask as stored, to readers shown the plaintext only; absent when it
    /// has none (its type's mask applies) or the caller's transform is not `reveal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    mask: Option<Value>,
    /// On the answer to a card's create only: its brand, last four digits and expiry, for
    /// receipts (never the number or the CVC).
    #[serde(skip_serializing_if = "Option::is_none")]
    card: Option<CardSummary>,
}

impl TokenView {
    fn build(t: Token, data: Option<Secret<Value>>, with_fingerprint: bool) -> Self {
        Self {
            id: t.id,
            tenant_id: t.tenant_id,
            token_type: t.token_type,
            data,
            containers: vec![t.container.as_str().to_string()],
            metadata: t.metadata,
            created_by: t.created_by,
            created_at: t.created_at,
            modified_by: t.modified_by,
            modified_at: t.modified_at,
            fingerprint: with_fingerprint.then_some(t.fingerprint),
            mask: if with_fingerprint { t.mask } else { None },
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

    /// The answer to a create ([`TokenView::written`]) and, for a card created under a
    /// `reveal` or `mask` transform, its display fields: brand, last four digits and expiry
    /// (the caller just sent the card, and the type's mask shows as much). Under `redact`,
    /// neither `data` nor the card fields (docs/api.md, "Transforms").
    pub fn created(t: Token, viewer: &Principal) -> Self {
        let shown = viewer.transform_on(Permission::TokenCreate, &t.container);
        let card = (t.token_type == TokenType::Card && shown > DataTransform::Redact)
            .then(|| CardSummary::of(t.data.expose()))
            .flatten();
        Self {
            card,
            ..Self::written(t, viewer, Permission::TokenCreate)
        }
    }

    /// The answer to a child's create: [`TokenView::created`] without `data` whatever the
    /// transform (docs/api.md, "Transforms").
    pub fn created_child(t: Token, viewer: &Principal) -> Self {
        Self {
            data: None,
            ..Self::created(t, viewer)
        }
    }

    /// The token as a reading answer shows it to `viewer`, who read it with `permission`
    /// (`token:read`, or `token:search` for a search): `data` as the caller's transform on its
    /// container decides (the plaintext, the rendered mask, or no member), the fingerprint
    /// only with the plaintext (docs/api.md, "Transforms").
    pub fn read(mut t: Token, viewer: &Principal, permission: Permission) -> Self {
        let shown = viewer.shown_on(permission, &t.container);
        let data = match shown {
            DataTransform::Reveal => Some(std::mem::replace(&mut t.data, Secret::new(Value::Null))),
            DataTransform::Mask => {
                masked(t.token_type, t.mask.as_ref(), t.data.expose()).map(Secret::new)
            }
            DataTransform::Redact => None,
        };
        Self::build(t, data, shown == DataTransform::Reveal)
    }

    /// The answer to a write made with `permission` (`token:create`, `token:update`): under a
    /// `mask` transform the rendered mask, otherwise no `data` (a write's answer never carries
    /// the plaintext: `token:create` and `token:update` do not let one read a token); the
    /// fingerprint only when `viewer` may read the plaintext.
    pub fn written(t: Token, viewer: &Principal, permission: Permission) -> Self {
        let data = match viewer.shown_on(permission, &t.container) {
            DataTransform::Mask => {
                masked(t.token_type, t.mask.as_ref(), t.data.expose()).map(Secret::new)
            }
            DataTransform::Reveal | DataTransform::Redact => None,
        };
        let readable = viewer.may_see(Permission::TokenRead, &t.container);
        Self::build(t, data, readable)
    }

    /// The token as a proxy's `token:` expressions see it: `token:use` reveals the plaintext
    /// whatever the transforms of reads (docs/api.md, "Transforms").
    pub fn used(mut t: Token) -> Self {
        let data = std::mem::replace(&mut t.data, Secret::new(Value::Null));
        Self::build(t, Some(data), true)
    }

    /// Without any data (a child's create answer, and a search asked for none); the
    /// fingerprint only when `viewer` may read the plaintext.
    pub fn without_data(t: Token, viewer: &Principal) -> Self {
        let readable = viewer.may_see(Permission::TokenRead, &t.container);
        Self::build(t, None, readable)
    }

    /// The view as a JSON value (for `token:` expressions and `req.svc`), held as a secret
    /// when it carries data.
    pub fn to_json(&self) -> Secret<Value> {
        // Serialising this struct of strings, maps and a JSON value cannot fail.
        Secret::new(serde_json::to_value(self).unwrap_or(Value::Null))
    }
}
