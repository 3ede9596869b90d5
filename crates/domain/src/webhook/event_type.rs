//! The event types a webhook can subscribe to: Basis Theory's names for what Tessera records
//! (docs/webhooks.md, "Events"), and which audit action each comes from.

use std::{fmt, str::FromStr};

use serde::{Serialize, Serializer};

use crate::{audit::AuditAction, permission::Permission};

macro_rules! event_types {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// One event type a webhook can subscribe to, by Basis Theory's name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum WebhookEventType {
            $($(#[$doc])* $variant,)*
        }

        impl WebhookEventType {
            /// Every offered type, in the order `GET /webhooks/event-types` lists them.
            pub const ALL: &'static [WebhookEventType] = &[$(WebhookEventType::$variant,)*];

            /// The wire name, e.g. `token.created`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(WebhookEventType::$variant => $name,)*
                }
            }
        }
    };
}

event_types! {
    /// A token was created (one event per token of a bulk `/tokenize`).
    TokenCreated => "token.created",
    /// A token was updated.
    TokenUpdated => "token.updated",
    /// A token was deleted.
    TokenDeleted => "token.deleted",
    /// The sweep deleted a token past its expiry.
    TokenExpired => "token.expired",
    /// A property of a token expired: a card's `cvc` past its retention.
    TokenPropertyExpired => "token.property.expired",
    /// Token data was returned to a caller.
    TokenRead => "token.read",
    /// An application was created.
    ApplicationCreated => "application.created",
    /// An application was updated.
    ApplicationUpdated => "application.updated",
    /// An application was deleted.
    ApplicationDeleted => "application.deleted",
    /// A key was issued to an application (also by `regenerate`).
    ApplicationKeyCreated => "application.key.created",
    /// An application's key was revoked.
    ApplicationKeyDeleted => "application.key.deleted",
    /// A proxy was created.
    ProxyCreated => "proxy.created",
    /// A proxy was updated.
    ProxyUpdated => "proxy.updated",
    /// A proxy was deleted.
    ProxyDeleted => "proxy.deleted",
}

impl WebhookEventType {
    /// The webhook type an audit action is delivered as, if any.
    pub fn of_action(action: AuditAction) -> Option<Self> {
        use AuditAction as A;
        Some(match action {
            A::TokenCreated => Self::TokenCreated,
            A::TokenUpdated => Self::TokenUpdated,
            A::TokenDeleted => Self::TokenDeleted,
            A::TokenExpired => Self::TokenExpired,
            A::TokenCvcRemoved => Self::TokenPropertyExpired,
            A::TokenRead => Self::TokenRead,
            A::ApplicationCreated => Self::ApplicationCreated,
            A::ApplicationUpdated => Self::ApplicationUpdated,
            A::ApplicationDeleted => Self::ApplicationDeleted,
            A::ApplicationKeyCreated | A::ApplicationKeyRegenerated => Self::ApplicationKeyCreated,
            A::ApplicationKeyRevoked => Self::ApplicationKeyDeleted,
            A::ProxyCreated => Self::ProxyCreated,
            A::ProxyUpdated => Self::ProxyUpdated,
            A::ProxyDeleted => Self::ProxyDeleted,
            _ => return None,
        })
    }

    /// What a caller must hold to subscribe, besides `webhook:create` or `webhook:update`
    /// (docs/webhooks.md, "No escalation"): `audit:read` for every type, since an event
    /// says what the trail says (ids, the action, the actor); and the resource's own read
    /// permission where a management application can hold it.
    pub fn required(self) -> &'static [Permission] {
        match self.as_str().split('.').next() {
            Some("application") => &[Permission::AuditRead, Permission::ApplicationRead],
            Some("proxy") => &[Permission::AuditRead, Permission::ProxyRead],
            _ => &[Permission::AuditRead],
        }
    }
}

impl fmt::Display for WebhookEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string names no offered event type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an event type Tessera sends (GET /webhooks/event-types lists them)")]
pub struct UnknownEventType(pub String);

impl FromStr for WebhookEventType {
    type Err = UnknownEventType;

    /// Takes the wire names, and the `token:created` spelling of Basis Theory's SDK examples
    /// (its reference text uses dots; docs/migrating.md).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let dotted = s.replace(':', ".");
        WebhookEventType::ALL
            .iter()
            .copied()
            .find(|t| t.as_str() == dotted)
            .ok_or_else(|| UnknownEventType(s.to_string()))
    }
}

impl Serialize for WebhookEventType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_both_spellings() {
        for t in WebhookEventType::ALL {
            assert_eq!(t.as_str().parse::<WebhookEventType>().expect("dot"), *t);
            let colon = t.as_str().replacen('.', ":", 1);
            assert_eq!(colon.parse::<WebhookEventType>().expect("colon"), *t);
        }
        assert!("3ds.session.created".parse::<WebhookEventType>().is_err());
        assert!("proxy.invoked".parse::<WebhookEventType>().is_err());
    }

    #[test]
    fn every_type_comes_from_an_action_and_denials_and_internals_from_none() {
        for t in WebhookEventType::ALL {
            assert!(
                AuditAction::ALL
                    .iter()
                    .any(|a| WebhookEventType::of_action(*a) == Some(*t)),
                "{t} has no source"
            );
            assert!(t.required().contains(&Permission::AuditRead));
        }
        for a in [
            AuditAction::TokenDetokenized,
            AuditAction::TokenImported,
            AuditAction::WebhookCreated,
            AuditAction::AuditPruned,
            AuditAction::RequestReplayed,
        ] {
            assert_eq!(WebhookEventType::of_action(a), None);
        }
    }
}
