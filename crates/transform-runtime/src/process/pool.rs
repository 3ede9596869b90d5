//! Which of this thread's sandbox processes a job goes to.
//!
//! Each serving thread keeps its own processes (at most
//! [`crate::EngineConfig::processes_per_thread`]), so a request and its sandbox stay with one
//! serving thread. A process serves one tenant for its whole life. A job goes, in this order:
//!
//! 1. to the tenant's busy process with the fewest jobs, if it has fewer than [`DEPTH`] and
//!    none of them may wait for `req.svc` answers (which would hold up the jobs behind it):
//!    it is awake, and takes the job after its current ones without a wake-up;
//! 2. to an idle process of the tenant, or a new one, if the tenant may take one more process
//!    (a slot: see `slots.rs` for the fair share); an idle process of another tenant is
//!    stopped to make room when the thread has all it may have;
//! 3. to the tenant's busy process with the fewest jobs, however many (with the same proviso);
//! 4. else it waits for a slot (at most the queue timeout: then [`TransformError::Busy`], a
//!    503 that does not quarantine the proxy).

use std::{cell::RefCell, rc::Rc};

use futures_util::FutureExt;

use super::{
    sandbox::{Assigned, Sandbox},
    slots::{Slot, Slots},
};
use crate::{config::SandboxCommand, host::Inner, message::TransformError};

/// Jobs queued in one process before another process of the tenant is woken for the next.
pub(super) const DEPTH: usize = 16;

/// This thread's sandboxes.
pub(super) struct Pool {
    sandboxes: RefCell<Vec<Rc<Sandbox>>>,
    slots: Rc<Slots>,
    max: usize,
}

impl Pool {
    pub(super) fn new(max: usize) -> Self {
        Self {
            sandboxes: RefCell::new(Vec::new()),
            slots: Slots::new(max),
            max: max.max(1),
        }
    }

    /// A process of `tenant` for one job (see the module docs).
    pub(super) async fn choose(
        &self,
        inner: &Inner,
        command: &SandboxCommand,
        (tenant, svc): (&str, bool),
    ) -> Result<Assigned, TransformError> {
        self.sandboxes.borrow_mut().retain(|s| !s.is_dead());
        if let Some(busy) = self.busy(tenant, Some(DEPTH)) {
            return Ok(busy.assign(None, svc));
        }
        if let Some(slot) = self.slots.acquire(tenant).now_or_never() {
            return self.activate(inner, command, (tenant, svc), slot).await;
        }
        if let Some(busy) = self.busy(tenant, None) {
            return Ok(busy.assign(None, svc));
        }
        // Waiting for a slot is not running: it has its own bound, and running out of it is
        // not the transform's fault (no quarantine).
        let slot = tokio::time::timeout(inner.config.queue_timeout, self.slots.acquire(tenant))
            .await
            .map_err(|_| TransformError::Busy)?;
        self.activate(inner, command, (tenant, svc), slot).await
    }

    /// The tenant's busy process with the fewest jobs, if it has fewer than `below`.
    fn busy(&self, tenant: &str, below: Option<usize>) -> Option<Rc<Sandbox>> {
        self.sandboxes
            .borrow()
            .iter()
            .filter(|s| s.tenant == tenant && s.is_active() && s.takes_more())
            .filter(|s| below.is_none_or(|b| s.assigned() < b))
            .min_by_key(|s| s.assigned())
            .cloned()
    }

    /// An idle process of the tenant, or a new one, with `slot`.
    async fn activate(
        &self,
        inner: &Inner,
        command: &SandboxCommand,
        (tenant, svc): (&str, bool),
        slot: Slot,
    ) -> Result<Assigned, TransformError> {
        let idle = self
            .sandboxes
            .borrow()
            .iter()
            .rfind(|s| s.tenant == tenant && !s.is_active() && !s.is_dead())
            .cloned();
        if let Some(idle) = idle {
            return Ok(idle.assign(Some(slot), svc));
        }
        self.make_room();
        let fresh = Sandbox::spawn(inner, command, tenant).await?;
        self.sandboxes.borrow_mut().push(fresh.clone());
        Ok(fresh.assign(Some(slot), svc))
    }

    /// Stops an idle process of another tenant when the thread has all it may have (the
    /// caller holds a slot, so at most `max - 1` others are busy and one is idle).
    fn make_room(&self) {
        let mut sandboxes = self.sandboxes.borrow_mut();
        if sandboxes.len() < self.max {
            return;
        }
        if let Some(i) = sandboxes.iter().position(|s| !s.is_active()) {
            let idle = sandboxes.remove(i);
            idle.kill();
        }
    }
}
