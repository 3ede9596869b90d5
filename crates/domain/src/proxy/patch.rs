//! A JSON merge patch (RFC 7396) of a proxy (`PATCH /proxies/{id}`): applied to the stored
//! proxy's settings, it yields the [`ProxyInput`] that `PUT /proxies/{id}` would have been sent.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use super::{ApplicationRef, Proxy, ProxyInput, TransformInput};
use crate::{secret::Secret, validation::ValidationErrors};

/// `Some(value)` for a field that is present, `null` included (with `#[serde(default)]`, an
/// absent field stays `None`): how a merge patch tells "remove" from "leave alone".
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// Configuration entries of a patch: a key set to a string is set, a key set to `null` removed.
type ConfigurationPatch = BTreeMap<String, Option<String>>;

/// A JSON merge patch of a proxy: present fields replace, `null` removes an optional field,
/// absent fields stay. The same fields as [`ProxyInput`].
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "name": "payments (v2)",
    "configuration": {"API_KEY": "sk_test_456", "OLD_KEY": null},
    "response_transform": null
})))]
#[serde(deny_unknown_fields)]
pub struct ProxyPatch {
    /// A new display name, 1–200 characters (not `null`).
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub name: Option<Option<String>>,
    /// A new destination URL (not `null`).
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub destination_url: Option<Option<String>>,
    /// A new request transform, or `null` to remove it.
    #[serde(default, deserialize_with = "present")]
    pub request_transform: Option<Option<TransformInput>>,
    /// A new response transform, or `null` to remove it.
    #[serde(default, deserialize_with = "present")]
    pub response_transform: Option<Option<TransformInput>>,
    /// A new application, or `null` to remove it.
    #[serde(default, deserialize_with = "present")]
    pub application: Option<Option<ApplicationRef>>,
    /// Merged into the configuration: a key set to a string is set, a key set to `null`
    /// removed; `null` for the whole object removes the configuration.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<BTreeMap<String, Option<String>>>)
    )]
    pub configuration: Option<Option<Secret<ConfigurationPatch>>>,
    /// Whether invocation needs an API key; `null` returns to the default (`true`).
    #[serde(default, deserialize_with = "present")]
    pub require_auth: Option<Option<bool>>,
    /// Accepted by the parser only to refuse it: the key is generated and never changes.
    #[serde(default, deserialize_with = "super::present", rename = "key")]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub key_supplied: Option<()>,
}

impl ProxyPatch {
    /// The settings of `current` with this patch applied. A `null` for a required field is an
    /// error naming it; everything else is left to [`ProxyInput::validate`].
    pub fn apply_to(self, current: &Proxy) -> Result<ProxyInput, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let mut required =
            |field: &str, value: Option<Option<String>>, current: &String| match value {
                None => current.clone(),
                Some(Some(v)) => v,
                Some(None) => {
                    errors.add(field, "is required and cannot be null");
                    current.clone()
                }
            };
        let name = required("name", self.name, &current.name);
        let destination_url = required(
            "destination_url",
            self.destination_url,
            &current.destination_url,
        );
        errors.into_result()?;
        let transform = |patch: Option<Option<TransformInput>>,
                         current: &Option<Secret<String>>| {
            patch.unwrap_or_else(|| {
                current.as_ref().map(|code| TransformInput {
                    code: code.clone(),
                    kind: None,
                })
            })
        };
        Ok(ProxyInput {
            name,
            destination_url,
            request_transform: transform(self.request_transform, &current.request_transform),
            response_transform: transform(self.response_transform, &current.response_transform),
            application: self.application.unwrap_or_else(|| {
                current
                    .application_id
                    .map(|id| ApplicationRef { id: id.to_string() })
            }),
            configuration: merge_configuration(self.configuration, current),
            require_auth: self.require_auth.unwrap_or(Some(current.require_auth)),
            key_supplied: self.key_supplied,
        })
    }
}

/// The configuration after `patch` (RFC 7396 on a string map). An emptied map stays an empty
/// map, as `PUT` with `{}` stores it.
fn merge_configuration(
    patch: Option<Option<Secret<ConfigurationPatch>>>,
    current: &Proxy,
) -> Option<Secret<super::Configuration>> {
    match patch {
        None => current.configuration.clone(),
        Some(None) => None,
        Some(Some(mut entries)) => {
            let mut merged = current.configuration.clone().unwrap_or_default();
            for (key, value) in std::mem::take(entries.expose_mut()) {
                match value {
                    Some(v) => {
                        merged.expose_mut().insert(key, v);
                    }
                    None => {
                        merged.expose_mut().remove(&key);
                    }
                }
            }
            Some(merged)
        }
    }
}
