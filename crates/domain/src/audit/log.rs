//! The handle the vault and the edges record through: an [`AuditTrail`], or nothing.

use std::sync::Arc;

use time::OffsetDateTime;

use super::{
    AuditError, AuditEvent, AuditFilter, AuditStats, AuditTrail, ChainedEvent, CommitWait,
    VerifyReport,
};
use crate::{
    error::StoreError,
    ids::TenantId,
    pagination::{Page, PageRequest},
};

/// Where events go. Cheap to clone; [`AuditLog::off`] records and lists nothing.
#[derive(Clone, Debug, Default)]
pub struct AuditLog {
    trail: Option<Arc<dyn AuditTrail>>,
}

impl AuditLog {
    /// Records nothing (embedding programs and measurements without a trail).
    pub fn off() -> Self {
        Self { trail: None }
    }

    /// Records through `trail`.
    pub fn new(trail: Arc<dyn AuditTrail>) -> Self {
        Self { trail: Some(trail) }
    }

    /// Whether events are recorded at all.
    pub fn is_on(&self) -> bool {
        self.trail.as_ref().is_some_and(|t| t.is_on())
    }

    /// The writer's totals and queue depth (`None` when off).
    pub fn stats(&self) -> Option<AuditStats> {
        self.trail.as_ref()?.stats()
    }

    /// Records `events`; in sync mode, returns once they are committed.
    pub async fn record(&self, events: Vec<AuditEvent>) -> Result<(), AuditError> {
        self.submit(events).await?.committed().await
    }

    /// Hands `events` to the writer and returns at once (unless the writer is far behind); in
    /// sync mode, [`Pending::committed`] then waits for their commit. The gateway submits a
    /// request's events as soon as it has them and waits just before answering, so the
    /// commit overlaps the destination's round trip.
    pub async fn submit(&self, events: Vec<AuditEvent>) -> Result<Pending, AuditError> {
        match &self.trail {
            Some(trail) if !events.is_empty() => Ok(Pending(trail.submit(events).await?)),
            _ => Ok(Pending(None)),
        }
    }

    /// Returns once every event submitted before the call is committed, or the writer gave
    /// up on the chains it could not write (graceful shutdown, the end of a command-line run).
    pub async fn flush(&self) {
        if let Some(trail) = &self.trail {
            trail.flush().await;
        }
    }

    /// Where `tenant`'s chain stands (`(0, [0; 32])` when off or without events).
    pub async fn head(&self, tenant: TenantId) -> Result<(i64, [u8; 32]), StoreError> {
        match &self.trail {
            Some(trail) => trail.head(tenant).await,
            None => Ok((0, [0; 32])),
        }
    }

    /// A page of `tenant`'s events matching `filter`, newest first (none when off).
    pub async fn list(
        &self,
        tenant: TenantId,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<ChainedEvent>, StoreError> {
        match &self.trail {
            Some(trail) => trail.list(tenant, filter, page).await,
            None => Ok(Page {
                items: Vec::new(),
                total_items: 0,
                request: page,
            }),
        }
    }

    /// Re-walks every chain, or `tenant`'s (an empty report when off).
    pub async fn verify(&self, tenant: Option<TenantId>) -> Result<VerifyReport, StoreError> {
        match &self.trail {
            Some(trail) => trail.verify(tenant).await,
            None => Ok(VerifyReport::default()),
        }
    }

    /// Removes events that occurred before `before`; returns how many (none when off).
    pub async fn prune(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        match &self.trail {
            Some(trail) => trail.prune(before).await,
            None => Ok(0),
        }
    }
}

/// Events handed to the writer; in sync mode, their commit can be awaited.
#[derive(Debug)]
#[must_use = "in sync mode the events are not known to be committed until `committed` returns"]
pub struct Pending(Option<Box<dyn CommitWait>>);

impl Pending {
    /// Nothing to wait for.
    pub fn none() -> Self {
        Pending(None)
    }

    /// Returns once the events are committed (at once in async mode, or when there were
    /// none, or when they were folded into an aggregate refusal).
    pub async fn committed(self) -> Result<(), AuditError> {
        match self.0 {
            Some(wait) => wait.committed().await,
            None => Ok(()),
        }
    }
}
