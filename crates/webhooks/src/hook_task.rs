//! One webhook's delivery, run by the process holding its lease: read its tenant's chain on
//! from the cursor (checked), send each subscribed event in chain order, one at a time, and
//! move the cursor past each audit event once all it stands for was delivered. A failure
//! stops the line: the same event is retried after a backoff, and nothing after it is sent
//! before it (docs/webhooks.md, "Delivery").

use std::{sync::Arc, time::Duration};

use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent},
    store::StoredWebhook,
    timestamp,
    webhook::{Webhook, WebhookCursor, WebhookEvent, WebhookStatus},
};
use tokio::{sync::watch, time::Instant};

use crate::{
    chain::{self, ChainError, Linked},
    deliverer::Shared,
};

/// Audit events read per pass.
const EVENTS_PER_PASS: usize = 256;

/// How one pass ended.
enum Pass {
    /// Caught up, or waiting for a retry: look again after the poll interval (or sooner).
    Idle(Duration),
    /// The lease was lost, or the webhook is gone or disabled: stop.
    Stop,
}

/// A webhook being delivered by this process.
pub(crate) struct HookTask {
    pub(crate) shared: Arc<Shared>,
    pub(crate) hook: StoredWebhook,
    pub(crate) stop: watch::Receiver<bool>,
}

impl HookTask {
    /// Delivers until the lease is lost, the webhook goes, or the process stops; then
    /// releases the lease.
    pub(crate) async fn run(mut self) {
        let id = self.hook.webhook.id;
        self.shared.stats.update(id, |f| f.held = true);
        let mut renewed = Instant::now();
        loop {
            let wait = match self.pass(&mut renewed).await {
                Ok(Pass::Idle(wait)) => wait,
                Ok(Pass::Stop) => break,
                Err(e) => {
                    tracing::warn!(webhook = %id, error = %e, "webhook delivery paused");
                    self.shared.config.broken_pause
                }
            };
            if *self.stop.borrow() {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.stop.changed() => break,
            }
        }
        self.shared.stats.update(id, |f| f.held = false);
        if let Err(e) = self
            .shared
            .store
            .release_webhook(id, &self.shared.owner)
            .await
        {
            tracing::warn!(webhook = %id, error = %e, "releasing a webhook's lease");
        }
    }

    /// One pass: reload the webhook, then deliver what its chain holds after the cursor.
    async fn pass(&mut self, renewed: &mut Instant) -> Result<Pass, ChainError> {
        let config = self.shared.config;
        let (tenant, id) = (self.hook.webhook.tenant_id, self.hook.webhook.id);
        let Some(hook) = self.shared.store.get_webhook(tenant, id).await? else {
            self.shared.stats.forget(id);
            return Ok(Pass::Stop);
        };
        if hook.webhook.status != WebhookStatus::Enabled {
            return Ok(Pass::Stop);
        }
        self.hook = hook;
        let mut cursor = self.hook.cursor.clone();
        let now = timestamp::now();
        if let Some(next) = cursor.next_attempt_at.filter(|next| *next > now) {
            let left = Duration::try_from(next - now).unwrap_or_default();
            return self.idle(&cursor, renewed, left.min(config.poll)).await;
        }
        let head = self.shared.chain.audit_chain_head(Some(tenant)).await?;
        let Some(head) = head.filter(|h| h.last_seq > cursor.seq) else {
            self.shared.stats.update(id, |f| f.lag = 0);
            return self.idle(&cursor, renewed, config.poll).await;
        };
        if head.pruned_seq > cursor.seq {
            tracing::warn!(webhook = %id, from = cursor.seq, to = head.pruned_seq,
                "audit retention removed events before they were delivered; delivery goes on after them");
            cursor.seq = head.pruned_seq;
            cursor.hash = head.pruned_hash;
        }
        let lag = u64::try_from(head.last_seq - cursor.seq).unwrap_or(0);
        self.shared.stats.update(id, |f| f.lag = lag);
        let events = chain::read_after(
            self.shared.chain.as_ref(),
            tenant,
            cursor.seq,
            cursor.hash,
            EVENTS_PER_PASS,
        )
        .await?;
        for linked in events {
            let before = cursor.last_delivered_at;
            if !self.deliver_linked(&linked, &mut cursor).await? {
                return self.after_failure(cursor, renewed).await;
            }
            cursor.seq = linked.seq;
            cursor.hash = linked.hash;
            let lag = u64::try_from(head.last_seq - cursor.seq).unwrap_or(0);
            self.shared.stats.update(id, |f| f.lag = lag);
            // Saved after every event that was sent, so a crash re-sends at most that one.
            if cursor.last_delivered_at != before && !self.save(&cursor, renewed).await? {
                return Ok(Pass::Stop);
            }
        }
        if !self.save(&cursor, renewed).await? {
            return Ok(Pass::Stop);
        }
        Ok(Pass::Idle(Duration::from_millis(10)))
    }

    /// Sends every subscribed event `linked` stands for. `Ok(false)`: one failed (the cursor
    /// then holds the failure).
    async fn deliver_linked(
        &mut self,
        linked: &Linked,
        cursor: &mut WebhookCursor,
    ) -> Result<bool, ChainError> {
        let events = WebhookEvent::from_audit(&linked.event);
        let settings = &self.hook.webhook.settings;
        for event in events
            .iter()
            .filter(|e| settings.events.contains(&e.event_type))
        {
            let id = self.hook.webhook.id;
            match self.shared.send(&self.hook.webhook, event).await {
                Ok(()) => {
                    self.shared.stats.update(id, |f| f.delivered += 1);
                    cursor.failing_since = None;
                    cursor.attempts = 0;
                    cursor.next_attempt_at = None;
                    cursor.last_error = None;
                    cursor.last_delivered_at = Some(timestamp::now());
                }
                Err(why) => {
                    self.shared.stats.update(id, |f| f.failed += 1);
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
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Saves a failure; disables the webhook if it has failed for too long.
    async fn after_failure(
        &mut self,
        mut cursor: WebhookCursor,
        renewed: &mut Instant,
    ) -> Result<Pass, ChainError> {
        let now = timestamp::now();
        let failing_for = cursor
            .failing_since
            .and_then(|since| Duration::try_from(now - since).ok())
            .unwrap_or_default();
        if !self.shared.config.policy.gives_up(failing_for) {
            if !self.save(&cursor, renewed).await? {
                return Ok(Pass::Stop);
            }
            return Ok(Pass::Idle(Duration::from_millis(10)));
        }
        cursor.disabled_at = Some(now);
        cursor.next_attempt_at = None;
        let webhook = &self.hook.webhook;
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
    async fn idle(
        &self,
        cursor: &WebhookCursor,
        renewed: &mut Instant,
        wait: Duration,
    ) -> Result<Pass, ChainError> {
        if renewed.elapsed() >= self.shared.config.lease / 3 && !self.save(cursor, renewed).await? {
            return Ok(Pass::Stop);
        }
        Ok(Pass::Idle(wait))
    }

    /// Saves `cursor` and extends the lease. `false`: the lease was lost.
    async fn save(
        &self,
        cursor: &WebhookCursor,
        renewed: &mut Instant,
    ) -> Result<bool, ChainError> {
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
        *renewed = Instant::now();
        Ok(saved)
    }
}
