//! Webhooks: [`WebhookStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{StoreError, StoredSigningKey, StoredWebhook, WebhookStore};
use tessera_domain::webhook::{Webhook, WebhookCursor};
use tessera_domain::{Page, PageRequest, TenantId, WebhookId};
use time::OffsetDateTime;

detached! {
    WebhookStore {
        spawned fn insert_webhook(webhook: &StoredWebhook, max: u32) -> bool;
        caller fn get_webhook(tenant: TenantId, id: WebhookId) -> Option<StoredWebhook>;
        scan fn list_webhooks(tenant: TenantId, page: PageRequest) -> Page<StoredWebhook>;
        spawned fn replace_webhook(webhook: &Webhook, clear_failures: bool) -> bool;
        spawned fn delete_webhook(tenant: TenantId, id: WebhookId) -> bool;
        scan fn enabled_webhooks() -> Vec<StoredWebhook>;
        spawned fn claim_webhook(id: WebhookId, owner: &str, now: OffsetDateTime, until: OffsetDateTime) -> bool;
        spawned fn save_webhook_cursor(tenant: TenantId, id: WebhookId, cursor: &WebhookCursor, owner: &str, until: OffsetDateTime) -> bool;
        spawned fn disable_webhook(tenant: TenantId, id: WebhookId, cursor: &WebhookCursor, owner: &str) -> bool;
        spawned fn release_webhook(id: WebhookId, owner: &str) -> ();
        caller fn webhook_signing_keys() -> Vec<StoredSigningKey>;
        spawned fn insert_webhook_signing_key(key: &StoredSigningKey) -> bool;
    }
}
