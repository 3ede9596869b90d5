//! The operations an audit event can record, by their wire names (docs/api.md, "Audit
//! trail").

use std::{fmt, str::FromStr};

use serde::{Serialize, Serializer};

macro_rules! actions {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// The operation an event records (the list in docs/api.md, "Audit trail").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AuditAction {
            $($(#[$doc])* $variant,)*
        }

        impl AuditAction {
            /// Every action, in a stable order.
            pub const ALL: &'static [AuditAction] = &[$(AuditAction::$variant,)*];

            /// The wire name, e.g. `token.read`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(AuditAction::$variant => $name,)*
                }
            }
        }
    };
}

actions! {
    /// A token was created (`POST /tokens`, `/tokenize`, `/tokens/{id}/children`), or a
    /// deduplicating create answered with an existing token.
    TokenCreated => "token.created",
    /// Tokens were created with ids their caller chose (an import from another vault); the
    /// same request also records `token.created`.
    TokenImported => "token.imported",
    /// Token data was returned to the caller (read, list, children, search with data).
    TokenRead => "token.read",
    /// A token was patched.
    TokenUpdated => "token.updated",
    /// A token was deleted (through the API or by a transform's `req.svc`).
    TokenDeleted => "token.deleted",
    /// A proxy invocation substituted tokens into a request (one event per invocation).
    TokenDetokenized => "token.detokenized",
    /// A transform created a token through `req.svc`.
    TokenCreatedByTransform => "token.created_by_transform",
    /// A transform read a token through `req.svc`.
    TokenReadByTransform => "token.read_by_transform",
    /// The sweep sealed a card's data again without its CVC, its retention past (actor
    /// `system`).
    TokenCvcRemoved => "token.cvc_removed",
    /// The sweep deleted a token whose expiry had passed (actor `system`).
    TokenExpired => "token.expired",
    /// A parent → child link was made.
    AssociationCreated => "association.created",
    /// A parent → child link was removed.
    AssociationDeleted => "association.deleted",
    /// An application was created.
    ApplicationCreated => "application.created",
    /// An application was changed.
    ApplicationUpdated => "application.updated",
    /// An application was deleted.
    ApplicationDeleted => "application.deleted",
    /// An application's keys were all revoked and one was issued (`regenerate`).
    ApplicationKeyRegenerated => "application.key_regenerated",
    /// A key was added to an application (`POST /applications/{id}/keys`).
    ApplicationKeyCreated => "application.key_created",
    /// One key of an application was revoked (`DELETE /applications/{id}/keys/{key_id}`).
    ApplicationKeyRevoked => "application.key_revoked",
    /// A proxy was created.
    ProxyCreated => "proxy.created",
    /// A proxy was changed.
    ProxyUpdated => "proxy.updated",
    /// A proxy was deleted.
    ProxyDeleted => "proxy.deleted",
    /// A tenant's data key was re-wrapped under a new master key.
    TenantKeyRewrapped => "tenant.key_rewrapped",
    /// `api data-keys rotate` gave the tenant's data key a new version, which seals from now on.
    DataKeyRotated => "tenant.data_key_rotated",
    /// The re-encryption job finished a table: its rows are under the new version.
    DataKeyProgress => "tenant.data_key_progress",
    /// The re-encryption job finished: no row uses an older version but stored idempotent
    /// answers, which expire.
    DataKeyReencrypted => "tenant.data_key_reencrypted",
    /// `api data-keys retire` destroyed a version of the tenant's data key.
    DataKeyRetired => "tenant.data_key_retired",
    /// `api tenants delete` destroyed the tenant's data keys (in the deployment's chain).
    TenantKeysDestroyed => "tenant.keys_destroyed",
    /// `api tenants delete` deleted the tenant's rows (in the deployment's chain).
    TenantDeleted => "tenant.deleted",
    /// A webhook was registered (`POST /webhooks`).
    WebhookCreated => "webhook.created",
    /// A webhook was replaced (`PUT /webhooks/{id}`), which may re-enable it.
    WebhookUpdated => "webhook.updated",
    /// A webhook was deleted.
    WebhookDeleted => "webhook.deleted",
    /// The deliverer disabled a webhook after continuous failure (actor `system`;
    /// docs/webhooks.md, "Retries and disabling").
    WebhookDisabled => "webhook.disabled",
    /// A retry with an `Idempotency-Key` was answered with the stored answer of the first
    /// request (naming what that request created), after its checks passed again.
    RequestReplayed => "request.replayed",
    /// Retention removed the oldest events of this chain (the event says up to which
    /// position, and that event's hash, so a removal without one is caught by verification).
    AuditPruned => "audit.pruned",
}

impl fmt::Display for AuditAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string named no known action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown audit action `{0}`")]
pub struct UnknownAction(pub String);

impl FromStr for AuditAction {
    type Err = UnknownAction;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AuditAction::ALL
            .iter()
            .copied()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| UnknownAction(s.to_string()))
    }
}

impl Serialize for AuditAction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
