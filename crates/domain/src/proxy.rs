//! Pre-configured proxies (docs/api.md, "Proxies"): what a caller supplies,
//! how it is validated, and what is stored.

use std::collections::BTreeMap;

use rand::{distr::Alphanumeric, rand_core::UnwrapErr, rngs::SysRng, RngExt};
use serde::{Deserialize, Deserializer};
use time::OffsetDateTime;

use crate::{
    ids::{ApplicationId, ProxyId, TenantId},
    secret::Secret,
    validation::{char_len, check_name, check_no_nul, has_nul, ValidationErrors, NUL_MESSAGE},
};

mod destination;
mod patch;

pub use destination::{check_destination, DestinationError, DestinationPolicy, MAX_URL_CHARS};
pub use patch::ProxyPatch;

/// Longest proxy name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Most configuration entries.
pub const MAX_CONFIGURATION_ENTRIES: usize = 100;
/// Longest configuration key, in characters.
pub const MAX_CONFIGURATION_KEY_CHARS: usize = 200;
/// Longest transform source, in characters.
pub const MAX_TRANSFORM_CHARS: usize = 50_000;
/// Random base62 characters in a proxy key.
pub const KEY_CHARS: usize = 32;

/// A proxy's configuration map: names and values for transforms, often third-party
/// credentials, hence always held as a [`Secret`] and encrypted at rest.
pub type Configuration = BTreeMap<String, String>;

/// A transform as supplied: its source code.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, expecting = r#"an object {"code": "…"}"#)]
pub struct TransformInput {
    /// CommonJS source exporting an async function of `req`; at most 50,000 characters.
    #[cfg_attr(feature = "openapi", schema(max_length = 50000, value_type = String))]
    pub code: Secret<String>,
    /// The kind of transform; `code` is the only one. Optional (Basis Theory's SDKs send it);
    /// not stored, and not part of the proxy object.
    #[serde(default, rename = "type")]
    pub kind: Option<TransformKind>,
}

/// The kinds of transform a proxy may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// Read through a string, so that any other value (a number too) is an error on its own path.
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum TransformKind {
    /// JavaScript in `code`.
    Code,
}

impl TryFrom<String> for TransformKind {
    type Error = String;

    fn try_from(kind: String) -> Result<Self, String> {
        match kind.as_str() {
            "code" => Ok(TransformKind::Code),
            _ => Err("is not a transform type: the only one is `code`".to_string()),
        }
    }
}

/// The application whose key the transform's `req.svc` client uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, expecting = r#"an object {"id": "…"}"#)]
pub struct ApplicationRef {
    /// Its id: a `public` or `private` application of the tenant.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
}

/// What a caller supplies to create or replace a proxy.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "name": "payments",
    "destination_url": "https://api.example.com/charges",
    "request_transform": {"code": "module.exports = async function (req) { return { body: req.args.body, headers: req.args.headers }; };"},
    "configuration": {"API_KEY": "sk_test_123"},
    "require_auth": true
})))]
#[serde(deny_unknown_fields)]
pub struct ProxyInput {
    /// Display name, 1–200 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub name: String,
    /// Where requests are forwarded: an absolute `https` URL, at most 400 characters (`http`
    /// and private addresses only on a server started with `--allow-private-destinations`).
    #[cfg_attr(feature = "openapi", schema(max_length = 400))]
    pub destination_url: String,
    /// Runs on the request before forwarding.
    #[serde(default)]
    pub request_transform: Option<TransformInput>,
    /// Runs on the destination's 2xx response.
    #[serde(default)]
    pub response_transform: Option<TransformInput>,
    /// Application injected into transforms as `req.svc`.
    #[serde(default)]
    pub application: Option<ApplicationRef>,
    /// Values for transforms.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<BTreeMap<String, String>>))]
    pub configuration: Option<Secret<Configuration>>,
    /// Whether invocation needs an API key (default `true`).
    #[serde(default)]
    pub require_auth: Option<bool>,
    /// Accepted by the parser only to refuse it with a clear message: the key is generated.
    #[serde(default, deserialize_with = "present", rename = "key")]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub key_supplied: Option<()>,
}

/// `Some(())` whenever the field appears, whatever its value (even `null`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<()>, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| Some(()))
}

/// A [`ProxyInput`] that passed the checks that need no storage.
#[derive(Debug, Clone)]
pub struct ValidProxy {
    /// Display name.
    pub name: String,
    /// Destination URL, as given.
    pub destination_url: String,
    /// Request transform source (tenants paste credentials into code: a secret).
    pub request_transform: Option<Secret<String>>,
    /// Response transform source.
    pub response_transform: Option<Secret<String>>,
    /// Application id, parsed (existence is checked against the store).
    pub application_id: Option<ApplicationId>,
    /// Configuration.
    pub configuration: Option<Secret<Configuration>>,
    /// Whether invocation needs an API key.
    pub require_auth: bool,
}

impl ProxyInput {
    /// Applies docs/api.md, "Proxies"'s field rules.
    pub fn validate(self, policy: DestinationPolicy) -> Result<ValidProxy, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        if self.key_supplied.is_some() {
            errors.add("key", "is generated by the server and cannot be supplied");
        }
        check_name(&self.name, MAX_NAME_CHARS, &mut errors);
        if has_nul(&self.destination_url) {
            errors.add("destination_url", NUL_MESSAGE);
        } else if let Err(problem) = check_destination(&self.destination_url, policy) {
            errors.add("destination_url", problem.to_string());
        }
        for (field, transform) in [
            ("request_transform.code", &self.request_transform),
            ("response_transform.code", &self.response_transform),
        ] {
            let Some(t) = transform else { continue };
            if char_len(t.code.expose()) > MAX_TRANSFORM_CHARS {
                errors.add(
                    field,
                    format!("must be at most {MAX_TRANSFORM_CHARS} characters"),
                );
            } else {
                check_no_nul(t.code.expose(), field, &mut errors);
            }
        }
        if let Some(config) = &self.configuration {
            if config.expose().len() > MAX_CONFIGURATION_ENTRIES {
                errors.add(
                    "configuration",
                    format!("must have at most {MAX_CONFIGURATION_ENTRIES} entries"),
                );
            }
            for key in config.expose().keys() {
                if key.is_empty() || char_len(key) > MAX_CONFIGURATION_KEY_CHARS {
                    errors.add(
                        "configuration",
                        format!("keys must be 1 to {MAX_CONFIGURATION_KEY_CHARS} characters"),
                    );
                    break;
                }
            }
        }
        let application_id = match &self.application {
            None => None,
            Some(app) => match app.id.parse::<ApplicationId>() {
                Ok(id) => Some(id),
                Err(_) => {
                    errors.add("application.id", "is not a valid application id");
                    None
                }
            },
        };
        errors.into_result()?;
        Ok(ValidProxy {
            name: self.name,
            destination_url: self.destination_url,
            request_transform: self.request_transform.map(|t| t.code),
            response_transform: self.response_transform.map(|t| t.code),
            application_id,
            configuration: self.configuration,
            require_auth: self.require_auth.unwrap_or(true),
        })
    }
}

/// A fresh invocation key: 32 base62 characters from the OS CSPRNG.
pub fn generate_key() -> String {
    UnwrapErr(SysRng)
        .sample_iter(&Alphanumeric)
        .take(KEY_CHARS)
        .map(char::from)
        .collect()
}

/// Whether `key` has the shape of every invocation key ([`generate_key`]): exactly
/// [`KEY_CHARS`] ASCII letters and digits. Anything else cannot be a proxy's key, so it is
/// refused before any lookup, as malformed API keys are.
pub fn is_well_formed_key(key: &str) -> bool {
    key.len() == KEY_CHARS && key.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The stored `name` search form and a `LIKE` pattern for the list filter: case-insensitive,
/// unanchored, `*` matching any run of characters; `%`, `_` and `\` match themselves (the
/// pattern escapes them with `\`).
pub fn name_search_key(name: &str) -> String {
    name.to_lowercase()
}

/// See [`name_search_key`].
pub fn name_like_pattern(filter: &str) -> String {
    let mut pattern = String::from("%");
    for c in filter.to_lowercase().chars() {
        match c {
            '*' => pattern.push('%'),
            '%' | '_' | '\\' => {
                pattern.push('\\');
                pattern.push(c);
            }
            other => pattern.push(other),
        }
    }
    pattern.push('%');
    pattern
}

/// A proxy with its secrets decrypted: key, transforms and configuration are [`Secret`]s
/// (never printed, wiped when dropped).
#[derive(Clone)]
pub struct Proxy {
    /// Identifier.
    pub id: ProxyId,
    /// Owning tenant.
    pub tenant_id: TenantId,
    /// Display name.
    pub name: String,
    /// Invocation key.
    pub key: Secret<String>,
    /// Destination URL.
    pub destination_url: String,
    /// The destination URL parsed once (the gateway joins paths onto it for every request).
    pub parsed_destination: Option<url::Url>,
    /// Request transform source.
    pub request_transform: Option<Secret<String>>,
    /// Response transform source.
    pub response_transform: Option<Secret<String>>,
    /// Application for `req.svc`.
    pub application_id: Option<ApplicationId>,
    /// Configuration for transforms.
    pub configuration: Option<Secret<Configuration>>,
    /// Whether invocation needs an API key.
    pub require_auth: bool,
    /// Creating application.
    pub created_by: ApplicationId,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: ApplicationId,
    /// Last modification time.
    pub modified_at: OffsetDateTime,
}

impl Proxy {
    /// The proxy just written: the stored row's identity and times, with the secrets as given
    /// (no need to decrypt what was just encrypted).
    pub fn assemble(
        stored: crate::store::StoredProxy,
        key: Secret<String>,
        valid: ValidProxy,
    ) -> Self {
        Self {
            id: stored.id,
            tenant_id: stored.tenant_id,
            name: valid.name,
            key,
            parsed_destination: url::Url::parse(&valid.destination_url).ok(),
            destination_url: valid.destination_url,
            request_transform: valid.request_transform,
            response_transform: valid.response_transform,
            application_id: valid.application_id,
            configuration: valid.configuration,
            require_auth: valid.require_auth,
            created_by: stored.created_by,
            created_at: stored.created_at,
            modified_by: stored.modified_by,
            modified_at: stored.modified_at,
        }
    }
}

impl Proxy {
    /// The proxy an ephemeral invocation stands for: `caller`'s, to `url`, with no
    /// key, transforms, application or configuration, always authenticated. Its id is the
    /// caller's application id, so that ephemeral invocations share that application's
    /// rate-limit allowance; it is never stored.
    pub fn ephemeral(caller: &crate::access::Principal, url: url::Url) -> Self {
        let now = crate::timestamp::now();
        Self {
            id: ProxyId::from_uuid(*caller.application_id().as_uuid()),
            tenant_id: caller.tenant_id(),
            name: "ephemeral".to_string(),
            key: Secret::new(String::new()),
            destination_url: url.to_string(),
            parsed_destination: Some(url),
            request_transform: None,
            response_transform: None,
            application_id: None,
            configuration: None,
            require_auth: true,
            created_by: caller.application_id(),
            created_at: now,
            modified_by: caller.application_id(),
            modified_at: now,
        }
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("name", &self.name)
            .field("key", &"***")
            .field("destination_url", &self.destination_url)
            .field("require_auth", &self.require_auth)
            .field("application_id", &self.application_id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: serde_json::Value) -> ProxyInput {
        serde_json::from_value(json).expect("parse")
    }

    fn fields(r: Result<ValidProxy, ValidationErrors>) -> Vec<String> {
        r.map(|_| vec![])
            .unwrap_or_else(|e| e.fields().keys().cloned().collect())
    }

    const STRICT: DestinationPolicy = DestinationPolicy {
        allow_private_destinations: false,
    };
    const OPEN: DestinationPolicy = DestinationPolicy {
        allow_private_destinations: true,
    };

    #[test]
    fn a_transform_may_say_it_is_code_and_nothing_else() {
        let with = |kind: serde_json::Value| {
            serde_json::from_value::<ProxyInput>(serde_json::json!({
                "name": "p", "destination_url": "https://api.example.com",
                "request_transform": {"code": "x", "type": kind}}))
        };
        for kind in [serde_json::json!("code"), serde_json::Value::Null] {
            let v = with(kind.clone())
                .expect("accepted")
                .validate(STRICT)
                .expect("valid");
            assert_eq!(
                v.request_transform.map(|c| c.expose().clone()).as_deref(),
                Some("x"),
                "{kind}"
            );
        }
        for kind in ["Code", "matcher", "", "javascript"] {
            assert!(with(serde_json::json!(kind)).is_err(), "{kind}");
        }
        assert!(with(serde_json::json!(1)).is_err());
    }

    #[test]
    fn defaults_and_a_valid_proxy() {
        let v = input(
            serde_json::json!({"name": "p", "destination_url": "https://api.example.com/v1"}),
        )
        .validate(STRICT)
        .expect("valid");
        assert!(v.require_auth, "require_auth defaults to true");
        assert!(v.configuration.is_none() && v.application_id.is_none());
    }

    #[test]
    fn destinations() {
        for ok in [
            "https://api.example.com",
            "https://8.8.8.8/x?y=1",
            "https://[2606:4700::1111]/",
        ] {
            assert!(check_destination(ok, STRICT).is_ok(), "{ok}");
        }
        for bad in [
            "http://api.example.com",
            "ftp://x.example.com",
            "/relative",
            "https://",
            "https://u:p@example.com/",
            "https://example.com/#frag",
            "https://127.0.0.1/",
            "https://10.0.0.1/",
            "https://169.254.169.254/",
            "https://[::1]/",
            "https://[::ffff:192.168.0.1]/",
            "https://0.0.0.0/",
        ] {
            assert!(check_destination(bad, STRICT).is_err(), "{bad}");
        }
        assert!(check_destination("http://127.0.0.1:8080/", OPEN).is_ok());
        assert!(check_destination("ftp://127.0.0.1/", OPEN).is_err());
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert!(check_destination(&long, STRICT).is_err());
    }

    #[test]
    fn field_rules() {
        let big: Configuration = (0..101).map(|i| (format!("k{i}"), "v".into())).collect();
        let r = input(serde_json::json!({
            "name": "n".repeat(201), "destination_url": "http://x.example.com", "key": null,
            "request_transform": {"code": "x".repeat(MAX_TRANSFORM_CHARS + 1)},
            "application": {"id": "nope"}, "configuration": big,
        }))
        .validate(STRICT);
        assert_eq!(
            fields(r),
            vec![
                "application.id",
                "configuration",
                "destination_url",
                "key",
                "name",
                "request_transform.code"
            ]
        );
    }

    #[test]
    fn name_patterns_escape_like_metacharacters() {
        assert_eq!(name_like_pattern("Pay*Out"), "%pay%out%");
        assert_eq!(name_like_pattern("100%_\\"), "%100\\%\\_\\\\%");
        assert_eq!(name_search_key("Ünïcode"), "ünïcode");
    }

    #[test]
    fn keys_are_base62_of_the_documented_length() {
        let k = generate_key();
        assert_eq!(k.len(), KEY_CHARS);
        assert!(k.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert!(is_well_formed_key(&k));
        assert_ne!(k, generate_key());
    }

    #[test]
    fn only_keys_of_the_generated_shape_are_well_formed() {
        assert!(is_well_formed_key(&"aZ09".repeat(8)));
        for bad in [
            String::new(),
            "a".repeat(KEY_CHARS - 1),
            "a".repeat(KEY_CHARS + 1),
            format!("{}-", "a".repeat(KEY_CHARS - 1)),
            format!("{}é", "a".repeat(KEY_CHARS - 2)),
            "a".repeat(60 * 1024),
        ] {
            assert!(!is_well_formed_key(&bad), "{bad:.40}");
        }
    }

    #[test]
    fn configuration_never_prints() {
        let v = input(
            serde_json::json!({"name": "p", "destination_url": "https://e.example.com",
            "configuration": {"API_KEY": "sk_live_123"}}),
        );
        assert!(!format!("{v:?}").contains("sk_live_123"));
    }
}
