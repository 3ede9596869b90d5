//! The deliverer of one process: every second it reads the enabled webhooks of every
//! tenant and takes the lease of each one no live process holds, then delivers it in a task of
//! its own ([`crate::hook_task`]). The lease is a conditional update of the webhook's row, the
//! same on SQLite and PostgreSQL, so each webhook has one deliverer across every process and
//! replica; a process that dies loses its leases when they expire, and another (or its
//! restart) goes on from the saved cursor (docs/webhooks.md, "One deliverer per webhook").

use std::{collections::HashMap, sync::Arc, time::Duration};

use tessera_audit::AuditStore;
use tessera_domain::{
    ids::WebhookId,
    store::WebhookStore,
    timestamp,
    webhook::{check_url, signing, Webhook, WebhookEvent},
    Vault,
};
use tokio::{
    sync::{watch, Mutex},
    task::JoinHandle,
    time::Instant,
};

use crate::{
    backoff::Policy,
    hook_task::HookTask,
    stats::DeliveryStats,
    transport::{Outgoing, SendFailure, Transport},
};

/// How long a signing key read from the store is used before it is read again (a rotation's
/// overlap is far longer).
const SIGNING_KEY_REFRESH: Duration = Duration::from_secs(30);

/// The deliverer's settings.
#[derive(Debug, Clone, Copy)]
pub struct DelivererConfig {
    /// How long a lease lasts without renewal: after a crash, the longest a webhook waits
    /// for another deliverer.
    pub lease: Duration,
    /// How often a caught-up webhook looks for new events.
    pub poll: Duration,
    /// How often the enabled webhooks are read (one query) and free leases taken: how soon a
    /// new webhook, or one whose process died, is picked up.
    pub claim_every: Duration,
    /// How long delivery pauses after the chain could not be read.
    pub broken_pause: Duration,
    /// Retries and disabling.
    pub policy: Policy,
}

impl Default for DelivererConfig {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            poll: Duration::from_secs(1),
            claim_every: Duration::from_secs(1),
            broken_pause: Duration::from_secs(60),
            policy: Policy::default(),
        }
    }
}

/// What every webhook task of the process shares.
pub(crate) struct Shared {
    pub(crate) vault: Vault,
    pub(crate) store: Arc<dyn WebhookStore>,
    pub(crate) chain: Arc<dyn AuditStore>,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) config: DelivererConfig,
    pub(crate) owner: String,
    pub(crate) prefix: String,
    pub(crate) stats: DeliveryStats,
    allow_private: bool,
    signing: Mutex<Option<(Instant, Arc<signing::SigningKey>)>>,
    signer: tokio::sync::Semaphore,
}

/// Why a send did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The receiver failed (its answer, or no answer): counted, retried with backoff, and
    /// after long enough the webhook is disabled. The text is what the tenant is shown.
    Receiver(String),
    /// This deployment could not send (the signing key is unavailable): delivery pauses, and
    /// nothing is counted against the webhook.
    Deployment(String),
}

impl Shared {
    /// Signs and POSTs `event` to `webhook`.
    pub(crate) async fn send(
        &self,
        webhook: &Webhook,
        event: &WebhookEvent,
    ) -> Result<(), Failure> {
        // Checked again at every send, as the API checks it: a row written into the database
        // directly, or by a process allowing what this one does not, is not trusted.
        let url = check_url(&webhook.settings.url, self.allow_private)
            .map_err(|_| Failure::Receiver(UNREACHABLE.into()))?;
        let body = event.body(timestamp::now());
        let (version, signature) = self.sign(body.clone()).await?;
        let p = &self.prefix;
        let request = Outgoing {
            url: url.to_string(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("user-agent".into(), "Tessera-Webhooks".into()),
                (format!("{p}-SIGNATURE"), signature),
                (
                    format!("{p}-SIGNATURE-VERSION"),
                    signing::SIGNATURE_VERSION.into(),
                ),
                (format!("{p}-SIGNATURE-KEY-VERSION"), version.to_string()),
            ],
            body,
        };
        match self.transport.post(request).await {
            Ok(status) if (200..300).contains(&status) => Ok(()),
            Ok(status) => Err(Failure::Receiver(format!("the receiver answered {status}"))),
            Err(SendFailure::Timeout) => Err(Failure::Receiver(SendFailure::Timeout.to_string())),
            // Refused by the SSRF guard and unreachable read the same: the text must not tell
            // a tenant which names resolve to internal addresses.
            Err(_) => Err(Failure::Receiver(UNREACHABLE.into())),
        }
    }

    /// The signature of `body` by the key that signs now, off the async threads and one at a
    /// time per process (RSA signing is CPU: deliveries never take more than one core).
    async fn sign(&self, body: Vec<u8>) -> Result<(u32, String), Failure> {
        let key = self.signing_key().await?;
        let _turn = self.signer.acquire().await.map_err(|_| unavailable())?;
        let version = key.version();
        let signature = tokio::task::spawn_blocking(move || key.sign(&body))
            .await
            .map_err(|_| unavailable())?
            .map_err(|_| unavailable())?;
        Ok((version, signature))
    }

    /// The key that signs now (read again every [`SIGNING_KEY_REFRESH`]).
    async fn signing_key(&self) -> Result<Arc<signing::SigningKey>, Failure> {
        let mut held = self.signing.lock().await;
        if let Some((read, key)) = held.as_ref() {
            if read.elapsed() < SIGNING_KEY_REFRESH {
                return Ok(key.clone());
            }
        }
        let (_, key) = self
            .vault
            .webhook_signing_key_at(timestamp::now())
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "reading the webhook signing key");
                unavailable()
            })?;
        *held = Some((Instant::now(), key.clone()));
        Ok(key)
    }
}

/// What a tenant is shown when its receiver could not be reached or its address is refused.
const UNREACHABLE: &str = "the receiver could not be reached, or its address is not allowed";

fn unavailable() -> Failure {
    Failure::Deployment("the webhook signing key is unavailable".into())
}

/// Starts a deliverer.
pub struct Deliverer {
    vault: Vault,
    store: Arc<dyn WebhookStore>,
    chain: Arc<dyn AuditStore>,
    transport: Arc<dyn Transport>,
    config: DelivererConfig,
    prefix: String,
    stats: DeliveryStats,
    allow_private: bool,
}

impl std::fmt::Debug for Deliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("config", &self.config)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Deliverer {
    /// A deliverer reading webhooks from `store` and chains from `chain`, signing with the
    /// vault's key, sending through `transport`; its headers are `<prefix>-SIGNATURE` and
    /// `<prefix>-SIGNATURE-VERSION`.
    pub fn new(
        vault: Vault,
        store: Arc<dyn WebhookStore>,
        chain: Arc<dyn AuditStore>,
        transport: Arc<dyn Transport>,
        prefix: &str,
    ) -> Self {
        Self {
            vault,
            store,
            chain,
            transport,
            config: DelivererConfig::default(),
            prefix: prefix.to_string(),
            stats: DeliveryStats::default(),
            allow_private: false,
        }
    }

    /// Lets receivers be private addresses, and plain `http` to them
    /// (`--allow-private-destinations`; the transport's guard must allow them too).
    pub fn allowing_private_destinations(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// With `config` instead of the defaults.
    pub fn with_config(mut self, config: DelivererConfig) -> Self {
        self.config = config;
        self
    }

    /// Its figures, for `/metrics`.
    pub fn stats(&self) -> DeliveryStats {
        self.stats.clone()
    }

    /// Runs it until [`Running::stop`].
    pub fn spawn(self) -> Running {
        let (stop_tx, stop_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            vault: self.vault,
            store: self.store,
            chain: self.chain,
            transport: self.transport,
            config: self.config,
            owner: format!("deliverer-{}", uuid::Uuid::new_v4()),
            prefix: self.prefix,
            stats: self.stats,
            allow_private: self.allow_private,
            signing: Mutex::new(None),
            signer: tokio::sync::Semaphore::new(1),
        });
        let task = tokio::spawn(claim_loop(shared, stop_rx));
        Running {
            stop: stop_tx,
            task,
        }
    }
}

/// A running deliverer.
#[derive(Debug)]
pub struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops taking webhooks and asks each task to stop after the attempt in flight and
    /// release its lease; returns when they have, or after `within` (what is left is
    /// abandoned: its lease expires, and its cursor holds what was delivered).
    pub async fn stop(self, within: Duration) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout(within, &mut task).await.is_err() {
            task.abort();
            tracing::warn!("webhook deliveries still in flight at shutdown were abandoned");
        }
    }
}

async fn claim_loop(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tasks: HashMap<WebhookId, JoinHandle<()>> = HashMap::new();
    loop {
        tasks.retain(|_, t| !t.is_finished());
        match shared.store.enabled_webhooks().await {
            Ok(hooks) => {
                for hook in hooks {
                    let id = hook.webhook.id;
                    let now = timestamp::now();
                    if tasks.contains_key(&id) || hook.lease_until.is_some_and(|u| u > now) {
                        continue;
                    }
                    match shared
                        .store
                        .claim_webhook(id, &shared.owner, now, now + shared.config.lease)
                        .await
                    {
                        Ok(true) => {
                            let task = HookTask {
                                shared: shared.clone(),
                                hook,
                                stop: stop.clone(),
                                renewed: Instant::now(),
                            };
                            tasks.insert(id, tokio::spawn(task.run()));
                        }
                        Ok(false) => {}
                        Err(e) => {
                            tracing::warn!(webhook = %id, error = %e, "taking a webhook's lease")
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the webhooks to deliver"),
        }
        tokio::select! {
            _ = tokio::time::sleep(shared.config.claim_every) => {}
            _ = stop.changed() => break,
        }
    }
    for (_, task) in tasks {
        let _ = task.await;
    }
}
