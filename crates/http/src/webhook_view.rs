//! A webhook as the API shows it: Basis Theory's webhook object (`id`, `tenant_id`,
//! `status`, `name`, `url`, `notify_email`, `events`, `created_*`, `modified_*`).

use serde::Serialize;
use tessera_domain::{
    store::{StoredSigningKey, StoredWebhook},
    timestamp::serde_rfc3339,
    webhook::{WebhookEventType, WebhookStatus},
    ApplicationId, TenantId, WebhookId,
};
use time::OffsetDateTime;

/// A webhook (docs/webhooks.md, "The webhook object").
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct WebhookView {
    id: WebhookId,
    tenant_id: TenantId,
    status: WebhookStatus,
    name: String,
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    notify_email: Option<String>,
    #[schema(value_type = Vec<String>)]
    events: Vec<WebhookEventType>,
    created_by: ApplicationId,
    #[serde(with = "serde_rfc3339")]
    created_at: OffsetDateTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    modified_by: Option<ApplicationId>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "serde_rfc3339::option"
    )]
    modified_at: Option<OffsetDateTime>,
}

impl WebhookView {
    /// The view of `stored`.
    pub(crate) fn new(stored: StoredWebhook) -> Self {
        let w = stored.webhook;
        Self {
            id: w.id,
            tenant_id: w.tenant_id,
            status: w.status,
            name: w.settings.name,
            url: w.settings.url,
            notify_email: w.settings.notify_email,
            events: w.settings.events,
            created_by: w.created_by,
            created_at: w.created_at,
            modified_by: w.modified_by,
            modified_at: w.modified_at,
        }
    }
}

/// A published signing key (`GET /webhooks/signing-keys`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SigningKeyView {
    /// 1, 2, …: the `<PREFIX>-SIGNATURE-KEY-VERSION` of what it signs.
    version: u32,
    /// The public key, PEM (SubjectPublicKeyInfo).
    public_key: String,
    #[serde(with = "serde_rfc3339")]
    created_at: OffsetDateTime,
    /// From when it signs.
    #[serde(with = "serde_rfc3339")]
    activates_at: OffsetDateTime,
}

impl From<StoredSigningKey> for SigningKeyView {
    fn from(k: StoredSigningKey) -> Self {
        Self {
            version: k.version,
            public_key: k.public_pem,
            created_at: k.created_at,
            activates_at: k.activates_at,
        }
    }
}
