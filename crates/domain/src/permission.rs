//! The permissions an application can hold.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// One permission. Token permissions (`token:*`) can be scoped to containers by rules; the
/// others are tenant-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Permission {
    /// Create tokens.
    #[serde(rename = "token:create")]
    TokenCreate,
    /// Read tokens, including their data (as the transform shows it), and search them.
    #[serde(rename = "token:read")]
    TokenRead,
    /// Search tokens (`POST /tokens/search`, `POST /v2/tokens/search`) without reading them
    /// by id; answers show data as the transform does.
    #[serde(rename = "token:search")]
    TokenSearch,
    /// Update tokens.
    #[serde(rename = "token:update")]
    TokenUpdate,
    /// Delete tokens and associations.
    #[serde(rename = "token:delete")]
    TokenDelete,
    /// Detokenize through a proxy.
    #[serde(rename = "token:use")]
    TokenUse,
    /// Create proxies.
    #[serde(rename = "proxy:create")]
    ProxyCreate,
    /// Read proxies.
    #[serde(rename = "proxy:read")]
    ProxyRead,
    /// Update proxies.
    #[serde(rename = "proxy:update")]
    ProxyUpdate,
    /// Delete proxies.
    #[serde(rename = "proxy:delete")]
    ProxyDelete,
    /// Create applications.
    #[serde(rename = "application:create")]
    ApplicationCreate,
    /// Read applications.
    #[serde(rename = "application:read")]
    ApplicationRead,
    /// Update applications and regenerate their keys.
    #[serde(rename = "application:update")]
    ApplicationUpdate,
    /// Delete applications.
    #[serde(rename = "application:delete")]
    ApplicationDelete,
    /// Read the tenant's audit trail (`GET /audit-events`).
    #[serde(rename = "audit:read")]
    AuditRead,
    /// Create webhooks (Basis Theory also spells it `webhooks:create`; both are accepted).
    #[serde(rename = "webhook:create", alias = "webhooks:create")]
    WebhookCreate,
    /// Read webhooks.
    #[serde(rename = "webhook:read", alias = "webhooks:read")]
    WebhookRead,
    /// Update webhooks (and re-enable a disabled one).
    #[serde(rename = "webhook:update", alias = "webhooks:update")]
    WebhookUpdate,
    /// Delete webhooks.
    #[serde(rename = "webhook:delete", alias = "webhooks:delete")]
    WebhookDelete,
}

impl Permission {
    /// Every permission, in a stable order.
    pub const ALL: [Permission; 19] = [
        Permission::TokenCreate,
        Permission::TokenRead,
        Permission::TokenSearch,
        Permission::TokenUpdate,
        Permission::TokenDelete,
        Permission::TokenUse,
        Permission::ProxyCreate,
        Permission::ProxyRead,
        Permission::ProxyUpdate,
        Permission::ProxyDelete,
        Permission::ApplicationCreate,
        Permission::ApplicationRead,
        Permission::ApplicationUpdate,
        Permission::ApplicationDelete,
        Permission::AuditRead,
        Permission::WebhookCreate,
        Permission::WebhookRead,
        Permission::WebhookUpdate,
        Permission::WebhookDelete,
    ];

    /// Permissions added after applications were first written down: an application holding
    /// every other permission (the bootstrap admin of an older tenant) holds these too.
    pub const LATER: [Permission; 5] = [
        Permission::TokenSearch,
        Permission::WebhookCreate,
        Permission::WebhookRead,
        Permission::WebhookUpdate,
        Permission::WebhookDelete,
    ];

    /// The wire name, e.g. `token:read`.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::TokenCreate => "token:create",
            Permission::TokenRead => "token:read",
            Permission::TokenSearch => "token:search",
            Permission::TokenUpdate => "token:update",
            Permission::TokenDelete => "token:delete",
            Permission::TokenUse => "token:use",
            Permission::ProxyCreate => "proxy:create",
            Permission::ProxyRead => "proxy:read",
            Permission::ProxyUpdate => "proxy:update",
            Permission::ProxyDelete => "proxy:delete",
            Permission::ApplicationCreate => "application:create",
            Permission::ApplicationRead => "application:read",
            Permission::ApplicationUpdate => "application:update",
            Permission::ApplicationDelete => "application:delete",
            Permission::AuditRead => "audit:read",
            Permission::WebhookCreate => "webhook:create",
            Permission::WebhookRead => "webhook:read",
            Permission::WebhookUpdate => "webhook:update",
            Permission::WebhookDelete => "webhook:delete",
        }
    }

    /// True for `token:*` permissions, the ones rules scope to containers.
    pub fn is_token(self) -> bool {
        matches!(
            self,
            Permission::TokenCreate
                | Permission::TokenRead
                | Permission::TokenSearch
                | Permission::TokenUpdate
                | Permission::TokenDelete
                | Permission::TokenUse
        )
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string named no known permission.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission `{0}`")]
pub struct UnknownPermission(pub String);

impl FromStr for Permission {
    type Err = UnknownPermission;

    /// Takes the wire names, and Basis Theory's other spelling `webhooks:*` of the webhook
    /// permissions.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s_norm = match s.strip_prefix("webhooks:") {
            Some(rest) => format!("webhook:{rest}"),
            None => s.to_string(),
        };
        Permission::ALL
            .into_iter()
            .find(|p| p.as_str() == s_norm)
            .ok_or_else(|| UnknownPermission(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_str_and_serde() {
        for p in Permission::ALL {
            assert_eq!(p.as_str().parse::<Permission>().expect("parse"), p);
            let json = serde_json::to_string(&p).expect("ser");
            assert_eq!(json, format!("\"{}\"", p.as_str()));
            assert_eq!(serde_json::from_str::<Permission>(&json).expect("de"), p);
        }
        assert!("token:fly".parse::<Permission>().is_err());
        for (alias, p) in [
            ("webhooks:create", Permission::WebhookCreate),
            ("webhooks:read", Permission::WebhookRead),
            ("webhooks:update", Permission::WebhookUpdate),
            ("webhooks:delete", Permission::WebhookDelete),
        ] {
            assert_eq!(alias.parse::<Permission>().expect("alias"), p);
            let json = format!("\"{alias}\"");
            assert_eq!(serde_json::from_str::<Permission>(&json).expect("de"), p);
        }
        assert_eq!(Permission::ALL.iter().filter(|p| p.is_token()).count(), 6);
    }
}
