//! Sending one audit event's webhook events for a [`HookTask`], and what follows: the cursor
//! moved past each event sent (and saved, so a crash re-sends at most the one in flight), a
//! failure recorded with its backoff, the webhook disabled after continuous failure, and the
//! lease kept alive between sends (docs/webhooks.md, "Delivery").

use std::time::Duration;

use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent},
    timestamp,
    webhook::{Webhook, WebhookCursor, WebhookEvent, WebhookStatus},
};
use tokio::time::Instant;

use crate::{
    chain::Linked,
    deliverer::Failure,
    hook_task::{Halt, HookTask, Pass},
};

impl HookTask {
    /// Sends the subscribed events `linked` stands for, from the cursor's `sub` on, then moves
    /// the cursor past it. `Some`: the pass ends so (the lease was lost or the process stops:
    /// [`Pass::Stop`]; a send failed, and the failure was saved: what follows it).
    pub(crate) async fn deliver_linked(
        &mut self,
        linked: &Linked,
        cursor: &mut WebhookCursor,
    ) -> Result<Option<Pass>, Halt> {
        let events = WebhookEvent::from_audit(&linked.event);
        let start = cursor.sub as usize;
        for (i, event) in events.iter().enumerate().skip(start) {
            if !self
                .hook
                .webhook
                .settings
                .events
                .contains(&event.event_type)
            {
                continue;
            }
            if self.stopping() || !self.renew_if_due(cursor).await? {
                return Ok(Some(Pass::Stop));
            }
            match self.shared.send(&self.hook.webhook, event).await {
                Ok(()) => {
                    self.sent(cursor, i + 1);
                    if !self.save(cursor).await? {
                        return Ok(Some(Pass::Stop));
                    }
                }
                Err(Failure::Deployment(why)) => return Err(Halt::Deployment(why)),
                Err(Failure::Receiver(why)) => {
                    self.failed(cursor, why);
                    return Ok(Some(self.after_failure(cursor.clone()).await?));
                }
            }
        }
        cursor.seq = linked.seq;
        cursor.hash = linked.hash;
        cursor.sub = 0;
        Ok(None)
    }

    /// Records a success: the next event to send is the `next`-th of this audit event.
    fn sent(&self, cursor: &mut WebhookCursor, next: usize) {
        self.shared
            .stats
            .update(self.hook.webhook.id, |f| f.delivered += 1);
        cursor.sub = u32::try_from(next).unwrap_or(u32::MAX);
        cursor.failing_since = None;
        cursor.attempts = 0;
        cursor.next_attempt_at = None;
        cursor.last_error = None;
        cursor.last_delivered_at = Some(timestamp::now());
    }

    /// Records a failure and when to try again.
    fn failed(&self, cursor: &mut WebhookCursor, why: String) {
        self.shared
            .stats
            .update(self.hook.webhook.id, |f| f.failed += 1);
        let now = timestamp::now();
        let since = *cursor.failing_since.get_or_insert(now);
        cursor.attempts = cursor.attempts.saturating_add(1);
        let failing_for = Duration::try_from(now - since).unwrap_or_default();
        let wait = self
            .shared
            .config
            .policy
            .jittered(cursor.attempts, failing_for);
        cursor.next_attempt_at = Some(now + wait);
        cursor.last_error = Some(why);
    }

    /// Saves a failure; disables the webhook if it has failed for too long, unless it was
    /// changed meanwhile (a `PUT` that fixed or re-enabled it wins).
    async fn after_failure(&mut self, mut cursor: WebhookCursor) -> Result<Pass, Halt> {
        let now = timestamp::now();
        let failing_for = cursor
            .failing_since
            .and_then(|since| Duration::try_from(now - since).ok())
            .unwrap_or_default();
        if !self.shared.config.policy.gives_up(failing_for) {
            if !self.save(&cursor).await? {
                return Ok(Pass::Stop);
            }
            return Ok(Pass::Idle(Duration::from_millis(10)));
        }
        let webhook = &self.hook.webhook;
        let current = self
            .shared
            .store
            .get_webhook(webhook.tenant_id, webhook.id)
            .await?;
        let unchanged = current.is_some_and(|c| {
            c.webhook.modified_at == webhook.modified_at
                && c.webhook.status == WebhookStatus::Enabled
        });
        if !unchanged {
            return Ok(Pass::Stop);
        }
        cursor.disabled_at = Some(now);
        cursor.next_attempt_at = None;
        if self
            .shared
            .store
            .disable_webhook(webhook.tenant_id, webhook.id, &cursor, &self.shared.owner)
            .await?
        {
            self.record_disabling(webhook).await;
        }
        Ok(Pass::Stop)
    }

    /// Records `webhook.disabled` in the tenant's trail (actor `system`).
    async fn record_disabling(&self, webhook: &Webhook) {
        tracing::warn!(webhook = %webhook.id, tenant = %webhook.tenant_id,
            "webhook disabled after continuous delivery failure");
        let event = AuditEvent::success(
            webhook.tenant_id,
            AuditAction::WebhookDisabled,
            Actor::System,
            vec![(*webhook.id.as_uuid()).into()],
        );
        if let Err(e) = self.shared.vault.audit().record(vec![event]).await {
            tracing::warn!(webhook = %webhook.id, error = %e, "recording a webhook's disabling");
        }
    }

    /// Nothing to send now: renews the lease when it is due, then waits `wait`.
    pub(crate) async fn idle(
        &mut self,
        cursor: &WebhookCursor,
        wait: Duration,
    ) -> Result<Pass, Halt> {
        if !self.renew_if_due(cursor).await? {
            return Ok(Pass::Stop);
        }
        Ok(Pass::Idle(wait))
    }

    /// Extends the lease (saving `cursor`) once a third of it has passed. `false`: it was lost.
    async fn renew_if_due(&mut self, cursor: &WebhookCursor) -> Result<bool, Halt> {
        if self.renewed.elapsed() < self.shared.config.lease / 3 {
            return Ok(true);
        }
        self.save(cursor).await
    }

    /// Saves `cursor` and extends the lease. `false`: the lease was lost.
    pub(crate) async fn save(&mut self, cursor: &WebhookCursor) -> Result<bool, Halt> {
        let webhook = &self.hook.webhook;
        let until = timestamp::now() + self.shared.config.lease;
        let saved = self
            .shared
            .store
            .save_webhook_cursor(
                webhook.tenant_id,
                webhook.id,
                cursor,
                &self.shared.owner,
                until,
            )
            .await?;
        self.renewed = Instant::now();
        Ok(saved)
    }
}
