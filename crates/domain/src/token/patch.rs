//! A JSON merge patch of a token (`PATCH /tokens/{id}`), and its validation against the token
//! it applies to.

use serde::Deserialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::{data::validate_data, token_type::TokenType};
use crate::{
    binding::Destinations,
    metadata::{self, Metadata},
    secret::Secret,
    validation::ValidationErrors,
};

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
    /// New search index templates (replacing the old), or `null` for the type's defaults.
    #[serde(default, deserialize_with = "present")]
    pub search_indexes: Option<Option<Vec<String>>>,
    /// A new fingerprint expression, or `null` for the type's default. The fingerprint
    /// follows it at once.
    #[serde(default, deserialize_with = "present")]
    pub fingerprint_expression: Option<Option<String>>,
    /// Merged into the token's own mask as a JSON merge patch (RFC 7396: an object's members
    /// set, or removed when `null`; anything else replaces it), checked over the token's
    /// data; `null` for the type's mask. Changing it needs `token:read` with the `reveal`
    /// transform (docs/api.md, "Masks").
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Value>))]
    pub mask: Option<Option<Value>>,
    /// Accepted as the SDKs send it, and changes nothing: deduplication is not a stored
    /// property of a token; a create asking for it finds any equal live token (docs/api.md).
    #[serde(default)]
    pub deduplicate_token: Option<bool>,
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
    /// The new search index templates, when the patch changes them (`Some(None)`: the type's
    /// defaults).
    pub search_indexes: Option<Option<Vec<String>>>,
    /// The new fingerprint expression, when the patch changes it (`Some(None)`: the type's).
    pub fingerprint_expression: Option<Option<String>>,
    /// Whether the metadata differs from the token's.
    pub metadata_changed: bool,
    /// The new mask, when the patch changes it (`Some(None)`: the type's), not yet checked
    /// over the data (the vault does, over the data the token will hold).
    pub mask: Option<Option<Value>>,
}

impl TokenPatch {
    /// Validates the patch against the token it applies to (its type decides the data shape;
    /// the merged metadata must keep docs/api.md, "Tokens"'s limits), as of `now`.
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
            Some(Some(raw)) => crate::timestamp::future_expiry(&raw, now, &mut errors),
        };
        let destinations = self
            .destinations
            .map(|d| d.and_then(|raw| Destinations::validate(&raw, "destinations", &mut errors)));
        errors.into_result()?;
        Ok(TokenChanges {
            data,
            metadata_changed: merged != *metadata,
            metadata: merged,
            expires_at,
            destinations,
            search_indexes: self.search_indexes,
            fingerprint_expression: self
                .fingerprint_expression
                .map(|named| super::indexing::named_expression(token_type, named)),
            mask: self.mask.map(|m| m.filter(|v| !v.is_null())),
        })
    }
}
