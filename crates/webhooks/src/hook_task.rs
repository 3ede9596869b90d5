//! One webhook's delivery, run by the process holding its lease: read its tenant's chain on
//! from the cursor (checked, up to the head read before), send each subscribed event in chain
//! order, one at a time, and move the cursor past each event once it was sent. A failure
//! stops the line: the same event is retried after a backoff, and nothing after it is sent
//! before it (docs/webhooks.md, "Delivery"). Sending and the lease are in
//! [`crate::hook_send`].

use std::{sync::Arc, time::Duration};

use tessera_audit::ChainHead;
use tessera_domain::{
    error::StoreError,
    store::StoredWebhook,
    timestamp,
    webhook::{WebhookCursor, WebhookStatus},
};
use tokio::{sync::watch, time::Instant};

use crate::{
    chain::{self, ChainError, Linked},
    deliverer::Shared,
};

/// Audit events read per pass.
const EVENTS_PER_PASS: usize = 256;

/// How one pass ended.
pub(crate) enum Pass {
    /// Caught up, or waiting for a retry: look again after this long.
    Idle(Duration),
    /// The lease was lost, the webhook is gone or disabled, or the process stops: stop.
    Stop,
}

/// Why delivery pauses (logged; tried again after [`crate::DelivererConfig::broken_pause`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Halt {
    /// The chain could not be read on, or does not hold together.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// This deployment cannot send now (its signing key).
    #[error("{0}")]
    Deployment(String),
}

impl From<StoreError> for Halt {
    fn from(e: StoreError) -> Self {
        Halt::Chain(ChainError::Store(e))
    }
}

/// A webhook being delivered by this process.
pub(crate) struct HookTask {
    pub(crate) shared: Arc<Shared>,
    pub(crate) hook: StoredWebhook,
    pub(crate) stop: watch::Receiver<bool>,
    /// When the lease was last extended.
    pub(crate) renewed: Instant,
}

impl HookTask {
    /// Delivers until the lease is lost, the webhook goes, or the process stops; then
    /// releases the lease.
    pub(crate) async fn run(mut self) {
        let id = self.hook.webhook.id;
        self.shared.stats.update(id, |f| f.held = true);
        loop {
            let wait = match self.pass().await {
                Ok(Pass::Idle(wait)) => wait,
                Ok(Pass::Stop) => break,
                Err(e) => {
                    tracing::warn!(webhook = %id, error = %e, "webhook delivery paused");
                    self.shared.config.broken_pause
                }
            };
            if self.stopping() {
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

    /// Whether the process asked its deliveries to stop.
    pub(crate) fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// One pass: reload the webhook, then deliver what its chain holds after the cursor.
    async fn pass(&mut self) -> Result<Pass, Halt> {
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
            return self.idle(&cursor, left.min(config.poll)).await;
        }
        let head = self.shared.chain.audit_chain_head(Some(tenant)).await?;
        let head = head.unwrap_or_else(|| ChainHead::empty(Some(tenant)));
        if head.last_seq == cursor.seq {
            self.shared.stats.update(id, |f| f.lag = 0);
            return self.idle(&cursor, config.poll).await;
        }
        let events = self.read_on(&head, &mut cursor).await?;
        for linked in events {
            if let Some(end) = self.deliver_linked(&linked, &mut cursor).await? {
                return Ok(end);
            }
            let lag = u64::try_from(head.last_seq - cursor.seq).unwrap_or(0);
            self.shared.stats.update(id, |f| f.lag = lag);
        }
        if !self.save(&cursor).await? {
            return Ok(Pass::Stop);
        }
        Ok(Pass::Idle(Duration::from_millis(10)))
    }

    /// The checked events after the cursor, up to `head` (read before them): an event past it
    /// is left for the next pass, and the one at it must carry its hash. A cursor past the
    /// head, an empty read behind the head, or an event of another tenant is a broken chain.
    async fn read_on(
        &self,
        head: &ChainHead,
        cursor: &mut WebhookCursor,
    ) -> Result<Vec<Linked>, ChainError> {
        let tenant = self.hook.webhook.tenant_id;
        let broken = |after: i64, why: &str| ChainError::Broken {
            after,
            why: why.to_string(),
        };
        if cursor.seq > head.last_seq {
            return Err(broken(cursor.seq, "the cursor is past the chain's head"));
        }
        if head.pruned_seq > cursor.seq {
            tracing::warn!(webhook = %self.hook.webhook.id, from = cursor.seq, to = head.pruned_seq,
                "audit retention removed events before they were delivered; delivery goes on after them");
            cursor.seq = head.pruned_seq;
            cursor.hash = head.pruned_hash;
            cursor.sub = 0;
        }
        let store = self.shared.chain.as_ref();
        let mut events =
            chain::read_after(store, tenant, cursor.seq, cursor.hash, EVENTS_PER_PASS).await?;
        events.retain(|l| l.seq <= head.last_seq);
        if events.is_empty() && head.last_seq > cursor.seq {
            return Err(broken(
                cursor.seq,
                "no event follows the cursor below the head",
            ));
        }
        if let Some(last) = events.last().filter(|l| l.seq == head.last_seq) {
            if last.hash != head.last_hash {
                return Err(broken(
                    last.seq,
                    "the last event does not carry the head's hash",
                ));
            }
        }
        if let Some(stray) = events.iter().find(|l| l.event.tenant_id != Some(tenant)) {
            return Err(broken(stray.seq, "an event of another chain"));
        }
        Ok(events)
    }
}
