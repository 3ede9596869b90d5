//! Webhooks: their settings, where each one's delivery stands, which process delivers it
//! (its lease), and the deployment's signing keys (docs/webhooks.md).

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::{
    error::StoreError,
    ids::{TenantId, WebhookId},
    pagination::{Page, PageRequest},
    webhook::{Webhook, WebhookCursor},
};

/// A webhook with where its delivery stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredWebhook {
    /// The webhook.
    pub webhook: Webhook,
    /// Its delivery.
    pub cursor: WebhookCursor,
    /// Until when a process holds it (the deliverers skip a webhook whose lease is live).
    pub lease_until: Option<OffsetDateTime>,
}

/// A signing key as stored: its private half is a deployment key wrapped by the custody
/// (named `webhook-signing/<version>` among the vault keys); this row publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSigningKey {
    /// 1, 2, …
    pub version: u32,
    /// The public half, PEM.
    pub public_pem: String,
    /// When it was made.
    pub created_at: OffsetDateTime,
    /// From when it signs (it is published before, so receivers can take it first).
    pub activates_at: OffsetDateTime,
}

/// What webhooks need from storage.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Stores a new webhook unless its tenant already holds `max`: `false` then.
    async fn insert_webhook(&self, webhook: &StoredWebhook, max: u32) -> Result<bool, StoreError>;
    /// One webhook of `tenant`.
    async fn get_webhook(
        &self,
        tenant: TenantId,
        id: WebhookId,
    ) -> Result<Option<StoredWebhook>, StoreError>;
    /// A page of `tenant`'s webhooks, oldest first.
    async fn list_webhooks(
        &self,
        tenant: TenantId,
        page: PageRequest,
    ) -> Result<Page<StoredWebhook>, StoreError>;
    /// Replaces a webhook's settings and status; with `clear_failures`, also its run of
    /// failures (it is being enabled). `false`: no such webhook.
    async fn replace_webhook(
        &self,
        webhook: &Webhook,
        clear_failures: bool,
    ) -> Result<bool, StoreError>;
    /// Deletes a webhook. `false`: no such webhook.
    async fn delete_webhook(&self, tenant: TenantId, id: WebhookId) -> Result<bool, StoreError>;
    /// Every enabled webhook of every tenant, with its delivery (the deliverers' read).
    async fn enabled_webhooks(&self) -> Result<Vec<StoredWebhook>, StoreError>;
    /// Takes the webhook's lease for `owner` until `until`, if it is enabled and no other
    /// process holds an unexpired lease on it.
    async fn claim_webhook(
        &self,
        id: WebhookId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Saves where the delivery stands and extends the lease, if `owner` still holds it and
    /// the webhook is enabled. `false`: the lease was lost (or the webhook disabled or gone).
    async fn save_webhook_cursor(
        &self,
        tenant: TenantId,
        id: WebhookId,
        cursor: &WebhookCursor,
        owner: &str,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Disables the webhook after continuous failure, saving `cursor`, if `owner` holds its
    /// lease; releases the lease.
    async fn disable_webhook(
        &self,
        tenant: TenantId,
        id: WebhookId,
        cursor: &WebhookCursor,
        owner: &str,
    ) -> Result<bool, StoreError>;
    /// Releases `owner`'s lease on the webhook (shutdown).
    async fn release_webhook(&self, id: WebhookId, owner: &str) -> Result<(), StoreError>;
    /// The deployment's signing keys, oldest first.
    async fn webhook_signing_keys(&self) -> Result<Vec<StoredSigningKey>, StoreError>;
    /// Publishes a signing key (its wrapped private half is already among the vault keys).
    /// `false`: that version exists (another process made it first).
    async fn insert_webhook_signing_key(&self, key: &StoredSigningKey) -> Result<bool, StoreError>;
}
