//! Applications: the holders of API keys, with a type, permissions and container rules.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{
    container::Container,
    data_transform::DataTransform,
    ids::{ApplicationId, TenantId},
    origin::{Origin, MAX_ALLOWED_ORIGINS},
    permission::Permission,
    validation::{char_len, check_name, ValidationErrors},
};

pub use crate::api_key::ApplicationKey;

/// Longest application name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Most rules an application may carry.
pub const MAX_RULES: usize = 100;
/// Longest rule description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Most live keys an application may hold (docs/api.md, "Application keys").
pub const MAX_KEYS: usize = 100;

/// What kind of caller an application represents; it bounds which permissions it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ApplicationType {
    /// A back-end service: any `token:*` permission, no management permission.
    Private,
    /// A browser or mobile client: only `token:create` and `token:update`.
    Public,
    /// An operator: proxy and application management, no `token:*` (bar the bootstrap admin).
    Management,
}

impl ApplicationType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplicationType::Private => "private",
            ApplicationType::Public => "public",
            ApplicationType::Management => "management",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "private" => Some(ApplicationType::Private),
            "public" => Some(ApplicationType::Public),
            "management" => Some(ApplicationType::Management),
            _ => None,
        }
    }

    /// Whether an application of this type may hold `permission` (docs/api.md, "Applications").
    pub fn allows(self, permission: Permission) -> bool {
        match self {
            ApplicationType::Private => permission.is_token(),
            ApplicationType::Public => {
                matches!(
                    permission,
                    Permission::TokenCreate | Permission::TokenUpdate
                )
            }
            ApplicationType::Management => !permission.is_token(),
        }
    }
}

/// Grants token permissions on every container under `container`. Lower `priority` is
/// consulted first; the first rule whose container covers a token decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Free text for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Evaluation order, 1 first; unique within an application.
    pub priority: i32,
    /// The container (and everything under it) the rule covers.
    pub container: Container,
    /// The `token:*` permissions granted there; an empty list denies.
    pub permissions: Vec<Permission>,
    /// What answers show of the data of tokens the rule covers: `reveal` (the plaintext, and
    /// what a rule that names none means), `mask` or `redact` (docs/api.md, "Transforms").
    #[serde(default)]
    pub transform: DataTransform,
}

/// What a caller supplies to create an application (and, through [`ApplicationUpdate`], to
/// replace one).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "name": "checkout service",
    "type": "private",
    "permissions": ["token:create"],
    "rules": [{"description": "use cards", "priority": 1, "container": "/pci/",
               "permissions": ["token:read", "token:use"], "transform": "mask"}]
})))]
#[serde(deny_unknown_fields)]
pub struct ApplicationInput {
    /// Display name, 1–200 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub name: String,
    /// The application type.
    #[serde(rename = "type")]
    pub app_type: ApplicationType,
    /// Tenant-wide permissions; `token:*` entries here act as a last rule on `/`.
    #[serde(default)]
    pub permissions: Vec<Permission>,
    /// Container-scoped token permissions.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// When every key of the application stops working: RFC 3339, in the future. Left out
    /// (or `null`), the application does not expire.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub expires_at: Option<String>,
    /// Whether a key is issued with the application (default `true`); `false` creates it
    /// without one, and keys are added through `POST /applications/{id}/keys`.
    #[serde(default)]
    pub create_key: Option<bool>,
    /// For a `public` application used from browsers: the exact origins whose pages may
    /// create tokens with its keys (`https://shop.example`; `http` only for loopback hosts).
    /// Left out: none on create, unchanged on update.
    #[serde(default)]
    pub allowed_origins: Option<Vec<String>>,
}

/// What a caller supplies to replace an application (`PUT`): the body of a create, but `type`
/// may be left out to keep the current type (Basis Theory's SDKs send none).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "name": "checkout service",
    "permissions": ["token:create", "token:read"]
})))]
#[serde(deny_unknown_fields)]
pub struct ApplicationUpdate {
    /// Display name, 1–200 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub name: String,
    /// The new type; left out (or `null`), the application keeps its type.
    #[serde(default, rename = "type")]
    pub app_type: Option<ApplicationType>,
    /// Tenant-wide permissions; `token:*` entries here act as a last rule on `/`.
    #[serde(default)]
    pub permissions: Vec<Permission>,
    /// Container-scoped token permissions.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// A `public` application's browser origins; left out (or `null`), they are kept.
    #[serde(default)]
    pub allowed_origins: Option<Vec<String>>,
}

impl ApplicationUpdate {
    /// The full input, of the type the body names, else of `current`.
    pub fn with_type_or(self, current: ApplicationType) -> ApplicationInput {
        ApplicationInput {
            name: self.name,
            app_type: self.app_type.unwrap_or(current),
            permissions: self.permissions,
            rules: self.rules,
            expires_at: None,
            create_key: None,
            allowed_origins: self.allowed_origins,
        }
    }
}

impl From<ApplicationInput> for ApplicationUpdate {
    fn from(input: ApplicationInput) -> Self {
        Self {
            name: input.name,
            app_type: Some(input.app_type),
            permissions: input.permissions,
            rules: input.rules,
            allowed_origins: input.allowed_origins,
        }
    }
}

/// Input that passed validation: permissions deduplicated, rules sorted by priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidApplication {
    /// Display name.
    pub name: String,
    /// The application type.
    pub app_type: ApplicationType,
    /// Deduplicated permissions in their given order.
    pub permissions: Vec<Permission>,
    /// Rules in priority order.
    pub rules: Vec<Rule>,
    /// When its keys stop working, if ever (in the future when validated).
    pub expires_at: Option<OffsetDateTime>,
    /// Whether a key is issued with it.
    pub create_key: bool,
    /// Its browser origins, deduplicated; `None`: the input left them out.
    pub allowed_origins: Option<Vec<Origin>>,
}

impl ApplicationInput {
    /// Applies docs/api.md, "Applications": name length, type/permission compatibility, rule
    /// shape, and an `expires_at` in the future.
    pub fn validate(self) -> Result<ValidApplication, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        check_name(&self.name, MAX_NAME_CHARS, &mut errors);
        let expires_at = self.expires_at.as_deref().and_then(|raw| {
            crate::timestamp::future_expiry(raw, crate::timestamp::now(), &mut errors)
        });
        if self.permissions.is_empty() && self.rules.is_empty() {
            errors.add("permissions", "an application needs permissions or rules");
        }
        let mut seen = BTreeSet::new();
        let mut permissions = Vec::with_capacity(self.permissions.len());
        for (i, p) in self.permissions.iter().enumerate() {
            if !self.app_type.allows(*p) {
                errors.add(
                    format!("permissions[{i}]"),
                    format!(
                        "a {} application may not hold `{p}`",
                        self.app_type.as_str()
                    ),
                );
            }
            if seen.insert(*p) {
                permissions.push(*p);
            }
        }
        validate_rules(self.app_type, &self.rules, &mut errors);
        let allowed_origins = self
            .allowed_origins
            .as_deref()
            .map(|raw| validate_origins(self.app_type, raw, &mut errors));
        errors.into_result()?;
        let mut rules = self.rules;
        rules.sort_by_key(|r| r.priority);
        Ok(ValidApplication {
            name: self.name,
            app_type: self.app_type,
            permissions,
            rules,
            expires_at,
            create_key: self.create_key.unwrap_or(true),
            allowed_origins,
        })
    }
}

/// docs/api.md, "Allowed origins": exact origins, only on public applications.
fn validate_origins(
    app_type: ApplicationType,
    raw: &[String],
    errors: &mut ValidationErrors,
) -> Vec<Origin> {
    if app_type != ApplicationType::Public && !raw.is_empty() {
        errors.add(
            "allowed_origins",
            "only public applications are used from browsers; a private or management key must never reach one",
        );
    }
    if raw.len() > MAX_ALLOWED_ORIGINS {
        errors.add(
            "allowed_origins",
            format!("must list at most {MAX_ALLOWED_ORIGINS} origins"),
        );
    }
    let mut origins: Vec<Origin> = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        match Origin::parse(r) {
            Ok(origin) if !origins.contains(&origin) => origins.push(origin),
            Ok(_) => {}
            Err(why) => errors.add(format!("allowed_origins[{i}]"), why),
        }
    }
    origins
}

fn validate_rules(app_type: ApplicationType, rules: &[Rule], errors: &mut ValidationErrors) {
    if rules.len() > MAX_RULES {
        errors.add("rules", format!("must have at most {MAX_RULES} rules"));
    }
    let mut priorities = BTreeSet::new();
    for (i, rule) in rules.iter().enumerate() {
        if rule.priority < 1 {
            errors.add(format!("rules[{i}].priority"), "must be at least 1");
        } else if !priorities.insert(rule.priority) {
            errors.add(
                format!("rules[{i}].priority"),
                "must be unique among the rules",
            );
        }
        if rule
            .description
            .as_deref()
            .is_some_and(|d| char_len(d) > MAX_DESCRIPTION_CHARS)
        {
            errors.add(
                format!("rules[{i}].description"),
                format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
            );
        }
        for (j, p) in rule.permissions.iter().enumerate() {
            if !p.is_token() {
                errors.add(
                    format!("rules[{i}].permissions[{j}]"),
                    format!("rules grant only token permissions, not `{p}`"),
                );
            } else if !app_type.allows(*p) {
                errors.add(
                    format!("rules[{i}].permissions[{j}]"),
                    format!("a {} application may not hold `{p}`", app_type.as_str()),
                );
            }
        }
    }
}

/// A stored application (never includes the key; only its hash is kept, in the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Application {
    /// Identifier.
    pub id: ApplicationId,
    /// Owning tenant.
    pub tenant_id: TenantId,
    /// Display name.
    pub name: String,
    /// Type.
    pub app_type: ApplicationType,
    /// Tenant-wide permissions.
    pub permissions: Vec<Permission>,
    /// Rules in priority order.
    pub rules: Vec<Rule>,
    /// Application that created it (the bootstrap admin names itself).
    pub created_by: ApplicationId,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Application that last changed it.
    pub modified_by: ApplicationId,
    /// Last change.
    pub modified_at: OffsetDateTime,
    /// After this instant every key of the application is refused; `None`: never.
    pub expires_at: Option<OffsetDateTime>,
    /// A public application's browser origins (docs/api.md, "Allowed origins"); empty for
    /// every other type.
    pub allowed_origins: Vec<Origin>,
    /// Its keys (never their secrets), oldest first. Filled by the vault's application reads;
    /// empty where only the application was read (to authenticate, or to act as it).
    pub keys: Vec<ApplicationKey>,
}

impl Application {
    /// Application `id` of `tenant_id`, created and last modified by `by` at `at`: no
    /// permissions or rules yet, no expiry, no allowed origins and no keys (set what differs with
    /// struct update syntax).
    pub fn new(
        id: ApplicationId,
        tenant_id: TenantId,
        name: impl Into<String>,
        app_type: ApplicationType,
        (by, at): (ApplicationId, OffsetDateTime),
    ) -> Self {
        Self {
            id,
            tenant_id,
            name: name.into(),
            app_type,
            permissions: vec![],
            rules: vec![],
            created_by: by,
            created_at: at,
            modified_by: by,
            modified_at: at,
            expires_at: None,
            allowed_origins: vec![],
            keys: vec![],
        }
    }

    /// Whether its keys are refused at `now`.
    pub fn is_expired(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(
        app_type: ApplicationType,
        permissions: Vec<Permission>,
        rules: Vec<Rule>,
    ) -> ApplicationInput {
        ApplicationInput {
            name: "app".into(),
            app_type,
            permissions,
            rules,
            expires_at: None,
            create_key: None,
            allowed_origins: None,
        }
    }

    fn rule(priority: i32, container: &str, permissions: Vec<Permission>) -> Rule {
        Rule {
            description: None,
            priority,
            container: Container::parse(container).expect("container"),
            permissions,
            transform: DataTransform::Reveal,
        }
    }

    #[test]
    fn an_update_may_leave_the_type_out() {
        let update: ApplicationUpdate = serde_json::from_value(serde_json::json!({
            "name": "a", "permissions": ["token:read"]}))
        .expect("no type");
        assert_eq!(update.app_type, None);
        let kept = update.with_type_or(ApplicationType::Private);
        assert_eq!(kept.app_type, ApplicationType::Private);
        assert!(kept.validate().is_ok());
        let typed: ApplicationUpdate = serde_json::from_value(serde_json::json!({
            "name": "a", "type": "public", "permissions": ["token:create"]}))
        .expect("typed");
        assert_eq!(
            typed.with_type_or(ApplicationType::Private).app_type,
            ApplicationType::Public
        );
        for bad in [
            serde_json::json!({"name": "a", "type": "admin", "permissions": []}),
            serde_json::json!({"name": "a", "permissions": [], "extra": 1}),
            serde_json::json!({"permissions": ["token:read"]}),
        ] {
            assert!(
                serde_json::from_value::<ApplicationUpdate>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        let from = ApplicationUpdate::from(input(ApplicationType::Public, vec![], vec![]));
        assert_eq!(from.app_type, Some(ApplicationType::Public));
    }

    #[test]
    fn type_rules_bound_permissions() {
        use ApplicationType::*;
        use Permission::*;
        assert!(input(Private, vec![TokenRead, TokenUse], vec![])
            .validate()
            .is_ok());
        assert!(input(Private, vec![ProxyRead], vec![]).validate().is_err());
        assert!(input(Public, vec![TokenCreate, TokenUpdate], vec![])
            .validate()
            .is_ok());
        assert!(input(Public, vec![TokenRead], vec![]).validate().is_err());
        assert!(
            input(Management, vec![ProxyCreate, ApplicationRead], vec![])
                .validate()
                .is_ok()
        );
        let err = input(Management, vec![TokenRead], vec![])
            .validate()
            .expect_err("token perm");
        assert!(err.fields().contains_key("permissions[0]"));
        let err = input(Management, vec![], vec![rule(1, "/", vec![TokenRead])])
            .validate()
            .expect_err("token rule");
        assert!(err.fields().contains_key("rules[0].permissions[0]"));
    }

    #[test]
    fn needs_permissions_or_rules_and_a_name() {
        let err = input(ApplicationType::Private, vec![], vec![])
            .validate()
            .expect_err("empty");
        assert!(err.fields().contains_key("permissions"));
        let mut i = input(
            ApplicationType::Private,
            vec![Permission::TokenRead],
            vec![],
        );
        i.name = " ".into();
        assert!(i
            .clone()
            .validate()
            .expect_err("blank")
            .fields()
            .contains_key("name"));
        i.name = "n".repeat(MAX_NAME_CHARS);
        assert!(i.clone().validate().is_ok());
        i.name.push('n');
        assert!(i.validate().is_err());
        let rules_only = input(
            ApplicationType::Private,
            vec![],
            vec![rule(1, "/pci/", vec![])],
        );
        assert!(rules_only.validate().is_ok());
    }

    #[test]
    fn rules_need_unique_positive_priorities_and_token_permissions() {
        use Permission::*;
        let err = input(
            ApplicationType::Private,
            vec![],
            vec![
                rule(1, "/a/", vec![TokenRead]),
                rule(1, "/b/", vec![ProxyRead]),
                rule(0, "/c/", vec![]),
            ],
        )
        .validate()
        .expect_err("bad rules");
        assert!(err.fields().contains_key("rules[1].priority"));
        assert!(err.fields().contains_key("rules[1].permissions[0]"));
        assert!(err.fields().contains_key("rules[2].priority"));
    }

    #[test]
    fn validation_sorts_rules_and_dedupes_permissions() {
        use Permission::*;
        let v = input(
            ApplicationType::Private,
            vec![TokenRead, TokenRead],
            vec![rule(5, "/a/", vec![]), rule(2, "/b/", vec![])],
        )
        .validate()
        .expect("valid");
        assert_eq!(v.permissions, vec![TokenRead]);
        assert_eq!(
            v.rules.iter().map(|r| r.priority).collect::<Vec<_>>(),
            vec![2, 5]
        );
    }

    #[test]
    fn expiry_must_be_a_future_instant_and_keys_are_issued_by_default() {
        let mut i = input(
            ApplicationType::Private,
            vec![Permission::TokenRead],
            vec![],
        );
        let valid = i.clone().validate().expect("no expiry");
        assert_eq!(valid.expires_at, None);
        assert!(valid.create_key);
        i.expires_at = Some("2999-01-01T00:00:00Z".into());
        i.create_key = Some(false);
        let valid = i.clone().validate().expect("future");
        assert_eq!(valid.expires_at.map(|t| t.year()), Some(2999));
        assert!(!valid.create_key);
        for bad in ["2000-01-01T00:00:00Z", "tomorrow", "2999-01-01"] {
            i.expires_at = Some(bad.into());
            let err = i.clone().validate().expect_err(bad);
            assert!(err.fields().contains_key("expires_at"), "{bad}");
        }
        let parsed: ApplicationInput = serde_json::from_value(serde_json::json!({
            "name": "a", "type": "private", "permissions": ["token:read"],
            "expires_at": null, "create_key": null}))
        .expect("nulls are absent");
        assert_eq!((parsed.expires_at, parsed.create_key), (None, None));
    }

    #[test]
    fn only_public_applications_list_exact_origins() {
        use ApplicationType::*;
        let mut i = input(Public, vec![Permission::TokenCreate], vec![]);
        assert_eq!(i.clone().validate().expect("none").allowed_origins, None);
        i.allowed_origins = Some(vec![
            "https://shop.example".into(),
            "https://SHOP.example:443".into(),
            "http://localhost:3000".into(),
        ]);
        let valid = i.clone().validate().expect("exact origins");
        let kept: Vec<&str> = valid
            .allowed_origins
            .iter()
            .flatten()
            .map(Origin::as_str)
            .collect();
        assert_eq!(kept, ["https://shop.example", "http://localhost:3000"]);
        i.allowed_origins = Some(vec!["https://ok.example".into(), "*".into()]);
        let err = i.clone().validate().expect_err("wildcard");
        assert!(err.fields().contains_key("allowed_origins[1]"));
        i.allowed_origins = Some(vec!["https://shop.example".into(); MAX_ALLOWED_ORIGINS + 1]);
        assert!(i.clone().validate().is_err(), "too many");
        let mut private = input(Private, vec![Permission::TokenRead], vec![]);
        private.allowed_origins = Some(vec!["https://shop.example".into()]);
        let err = private.clone().validate().expect_err("private");
        assert!(err.fields().contains_key("allowed_origins"));
        private.allowed_origins = Some(vec![]);
        assert!(private.validate().is_ok(), "an empty list is no origin");
    }

    #[test]
    fn an_application_expires_at_its_instant() {
        let now = crate::timestamp::now();
        let mut app = Application::new(
            ApplicationId::new(),
            TenantId::new(),
            "a",
            ApplicationType::Private,
            (ApplicationId::new(), now),
        );
        assert!(!app.is_expired(now));
        app.expires_at = Some(now + time::Duration::seconds(1));
        assert!(!app.is_expired(now));
        assert!(app.is_expired(now + time::Duration::seconds(1)));
    }

    #[test]
    fn unknown_fields_and_permissions_are_rejected_by_serde() {
        let bad = r#"{"name":"a","type":"private","permissions":["token:fly"]}"#;
        assert!(serde_json::from_str::<ApplicationInput>(bad).is_err());
        let bad = r#"{"name":"a","type":"private","permissions":[],"extra":1}"#;
        assert!(serde_json::from_str::<ApplicationInput>(bad).is_err());
        let bad = r#"{"name":"a","type":"root","permissions":[]}"#;
        assert!(serde_json::from_str::<ApplicationInput>(bad).is_err());
    }
}
