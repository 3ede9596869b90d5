//! Webhook management (docs/webhooks.md): register, read, replace and delete a tenant's
//! webhooks, at most [`MAX_WEBHOOKS_PER_TENANT`] each.
//!
//! A caller may subscribe only to events about what it may read itself (no escalation): every
//! type needs `audit:read`, since an event says what the trail says; application and proxy
//! events also need `application:read` or `proxy:read`. A new webhook's cursor is its
//! tenant's chain head at creation: it gets the events committed after it.

use super::Vault;
use crate::{
    access::Principal,
    error::{Resource, StoreError, VaultError},
    ids::WebhookId,
    pagination::{Page, PageRequest},
    permission::Permission,
    store::StoredWebhook,
    timestamp,
    webhook::{
        check_input, Webhook, WebhookCursor, WebhookInput, WebhookSettings, WebhookStatus,
        MAX_WEBHOOKS_PER_TENANT,
    },
};

impl Vault {
    /// Registers a webhook (`webhook:create`).
    pub async fn create_webhook(
        &self,
        caller: &Principal,
        input: WebhookInput,
    ) -> Result<StoredWebhook, VaultError> {
        caller.require(Permission::WebhookCreate)?;
        let settings = self.checked_webhook(caller, input)?;
        if !self.audit.is_on() {
            return Err(VaultError::Conflict(
                "webhooks are fed by the audit trail, which this deployment does not record \
                 (--audit-durability off)"
                    .into(),
            ));
        }
        let (seq, hash) = self.audit.head(caller.tenant_id()).await?;
        let now = timestamp::now();
        let stored = StoredWebhook {
            webhook: Webhook {
                id: WebhookId::new(),
                tenant_id: caller.tenant_id(),
                status: settings.status.unwrap_or(WebhookStatus::Enabled),
                settings,
                created_by: caller.application_id(),
                created_at: now,
                modified_by: None,
                modified_at: None,
            },
            cursor: WebhookCursor::at(seq, hash),
            lease_until: None,
        };
        let inserted = match self
            .store
            .insert_webhook(&stored, MAX_WEBHOOKS_PER_TENANT)
            .await
        {
            Err(StoreError::Conflict(why)) => return Err(VaultError::Conflict(why)),
            other => other?,
        };
        if !inserted {
            return Err(VaultError::Conflict(format!(
                "a tenant holds at most {MAX_WEBHOOKS_PER_TENANT} webhooks"
            )));
        }
        Ok(stored)
    }

    /// A page of the tenant's webhooks, oldest first (`webhook:read`).
    pub async fn list_webhooks(
        &self,
        caller: &Principal,
        page: PageRequest,
    ) -> Result<Page<StoredWebhook>, VaultError> {
        caller.require(Permission::WebhookRead)?;
        Ok(self.store.list_webhooks(caller.tenant_id(), page).await?)
    }

    /// One webhook (`webhook:read`).
    pub async fn get_webhook(
        &self,
        caller: &Principal,
        id: WebhookId,
    ) -> Result<StoredWebhook, VaultError> {
        caller.require(Permission::WebhookRead)?;
        self.stored_webhook(caller, id).await
    }

    /// Replaces a webhook's settings (`webhook:update`); `status` left out keeps it. Enabling
    /// a disabled webhook clears its run of failures: delivery resumes where it stopped.
    pub async fn replace_webhook(
        &self,
        caller: &Principal,
        id: WebhookId,
        input: WebhookInput,
    ) -> Result<StoredWebhook, VaultError> {
        caller.require(Permission::WebhookUpdate)?;
        let settings = self.checked_webhook(caller, input)?;
        let existing = self.stored_webhook(caller, id).await?;
        let status = settings.status.unwrap_or(existing.webhook.status);
        let enabling =
            status == WebhookStatus::Enabled && existing.webhook.status == WebhookStatus::Disabled;
        let webhook = Webhook {
            settings,
            status,
            modified_by: Some(caller.application_id()),
            modified_at: Some(timestamp::now()),
            ..existing.webhook
        };
        if !self.store.replace_webhook(&webhook, enabling).await? {
            return Err(VaultError::NotFound(Resource::Webhook));
        }
        self.stored_webhook(caller, id).await
    }

    /// Deletes a webhook (`webhook:delete`); nothing more is sent to it.
    pub async fn delete_webhook(
        &self,
        caller: &Principal,
        id: WebhookId,
    ) -> Result<(), VaultError> {
        caller.require(Permission::WebhookDelete)?;
        if !self.store.delete_webhook(caller.tenant_id(), id).await? {
            return Err(VaultError::NotFound(Resource::Webhook));
        }
        Ok(())
    }

    /// `input` checked, and every event type it names open to `caller`.
    fn checked_webhook(
        &self,
        caller: &Principal,
        input: WebhookInput,
    ) -> Result<WebhookSettings, VaultError> {
        let settings = check_input(input, self.destinations.allow_private_destinations)?;
        for event_type in &settings.events {
            for &permission in event_type.required() {
                // `require` records the check, so an idempotent replay is answered only to a
                // caller that passes it again.
                caller
                    .require(permission)
                    .map_err(|_| VaultError::Escalation {
                        permission,
                        container: None,
                    })?;
            }
        }
        Ok(settings)
    }

    async fn stored_webhook(
        &self,
        caller: &Principal,
        id: WebhookId,
    ) -> Result<StoredWebhook, VaultError> {
        self.store
            .get_webhook(caller.tenant_id(), id)
            .await?
            .ok_or(VaultError::NotFound(Resource::Webhook))
    }
}
