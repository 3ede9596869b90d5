//! What the deliverers of this process have done, per webhook, for `/metrics`: deliveries,
//! failed attempts, and lag (events of its tenant's chain after its cursor).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use tessera_domain::ids::WebhookId;

/// One webhook's figures in this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HookFigures {
    /// Events delivered (answered 2xx).
    pub delivered: u64,
    /// Attempts that failed.
    pub failed: u64,
    /// Chain positions after the cursor, when last looked at.
    pub lag: u64,
    /// Whether this process delivers it now (holds its lease).
    pub held: bool,
}

/// The figures of every webhook this process has delivered. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct DeliveryStats(Arc<Mutex<BTreeMap<WebhookId, HookFigures>>>);

impl DeliveryStats {
    /// A copy of the figures, by webhook.
    pub fn snapshot(&self) -> Vec<(WebhookId, HookFigures)> {
        self.0
            .lock()
            .map(|m| m.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default()
    }

    /// Changes `id`'s figures.
    pub(crate) fn update(&self, id: WebhookId, f: impl FnOnce(&mut HookFigures)) {
        if let Ok(mut m) = self.0.lock() {
            f(m.entry(id).or_default());
        }
    }

    /// Forgets a webhook that was deleted.
    pub(crate) fn forget(&self, id: WebhookId) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(&id);
        }
    }
}
