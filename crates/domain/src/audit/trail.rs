//! The port between what is audited and the trail that records it: the vault and the edges
//! (the management API, the console, the gateway) hand events to an [`AuditTrail`] through
//! an [`super::AuditLog`]; the `tessera-audit` crate implements it over storage.

use std::fmt;

use async_trait::async_trait;
use time::OffsetDateTime;

use super::{AuditEvent, AuditFilter, ChainedEvent, VerifyReport};
use crate::{
    error::StoreError,
    ids::TenantId,
    pagination::{Page, PageRequest},
};

/// When a request's events must be committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Before the request's response is sent.
    Sync,
    /// Soon after (within 1 s while the database keeps up); flushed on graceful shutdown.
    Async,
}

/// Why events could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The writer could not commit in time; the events stay queued and are retried.
    #[error("the audit trail could not be written in time: {0}")]
    Unavailable(String),
    /// The writer has stopped (the process is shutting down).
    #[error("the audit writer has stopped")]
    Stopped,
}

/// What the trail's writer has done so far, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditStats {
    /// Events committed.
    pub events_committed: u64,
    /// Transactions committed.
    pub batches_committed: u64,
    /// Chain appends that failed (and were retried).
    pub commit_failures: u64,
    /// Time spent in successful commits, in microseconds.
    pub commit_micros: u64,
    /// Events waiting for the writer now.
    pub queued: u64,
    /// Chain appends refused because a record already held the chain's next position — a
    /// sign of tampering or of a failed write: alert on any.
    pub chain_conflicts: u64,
    /// Events of chains that could not be written, held for retry, now.
    pub events_held: u64,
    /// Held events dropped because too many were held.
    pub events_dropped: u64,
    /// Refusals folded into aggregate events.
    pub denials_folded: u64,
    /// Commits held open for more events (under load).
    pub windows_held: u64,
    /// Time commits were held open, in microseconds.
    pub window_micros: u64,
}

/// Submitted events whose commit can be awaited (sync mode).
#[async_trait]
pub trait CommitWait: Send + fmt::Debug {
    /// Returns once the events are committed, or why they were not.
    async fn committed(self: Box<Self>) -> Result<(), AuditError>;
}

/// The audit trail: records events, lists a tenant's, re-walks the chains and applies
/// retention.
#[async_trait]
pub trait AuditTrail: Send + Sync + fmt::Debug {
    /// Whether submitted events are recorded (a trail may only read what was recorded).
    fn is_on(&self) -> bool;
    /// The writer's totals and queue depth (`None` when nothing is recorded).
    fn stats(&self) -> Option<AuditStats>;
    /// Hands `events` to the writer and returns at once (unless the writer is far behind);
    /// in sync mode, what is returned waits for their commit.
    async fn submit(
        &self,
        events: Vec<AuditEvent>,
    ) -> Result<Option<Box<dyn CommitWait>>, AuditError>;
    /// Returns once every event submitted before the call is committed, or the writer gave
    /// up on the chains it could not write.
    async fn flush(&self);
    /// Where `tenant`'s chain stands: its last position and that event's hash (`(0, [0; 32])`
    /// for a chain without events). A webhook's delivery starts there.
    async fn head(&self, tenant: TenantId) -> Result<(i64, [u8; 32]), StoreError>;
    /// A page of `tenant`'s events matching `filter`, newest first.
    async fn list(
        &self,
        tenant: TenantId,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<ChainedEvent>, StoreError>;
    /// Re-walks every chain, or `tenant`'s.
    async fn verify(&self, tenant: Option<TenantId>) -> Result<VerifyReport, StoreError>;
    /// Removes events that occurred before `before`; returns how many.
    async fn prune(&self, before: OffsetDateTime) -> Result<u64, StoreError>;
}
