//! What the audit trail needs from storage: blocks per chain, and each chain's head.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::{block::AuditBlock, encoded::EncodedEvent, head::ChainHead};
use tessera_domain::audit::AuditEvent;
use tessera_domain::{error::StoreError, ids::TenantId};

/// What one chain's share of an append came to.
#[derive(Debug)]
pub struct ChainAppend {
    /// The chain.
    pub tenant_id: Option<TenantId>,
    /// The blocks stored (one, but for a backlog; none when every event was found already
    /// written), or why they were not: then nothing of this chain was written, and the other
    /// chains of the append are not affected.
    pub result: Result<Vec<AuditBlock>, StoreError>,
}

/// One chain's events of an append, in order.
#[derive(Debug)]
pub struct ChainEvents<'a> {
    /// The chain (`None`: the deployment's chain of refusals naming no tenant).
    pub chain: Option<TenantId>,
    /// Its events, encoded by the threads that made them.
    pub events: Vec<EncodedEvent<'a>>,
}

/// The audit writer's own way to the store: its own connection, and each chain's head as it
/// last wrote it, so that appending to a chain nobody else wrote meanwhile costs one update
/// of the head (conditional on it being unchanged) and one insert, prepared once.
#[async_trait]
pub trait AuditAppender: Send {
    /// Appends each chain's events after its head, one block per chain, in one transaction.
    /// A chain whose head changed since this appender last wrote it (another process wrote
    /// it, or retention pruned it) is read again and sealed after what it holds. A chain that
    /// cannot be extended fails alone, as in [`AuditStore::append_audit_events`].
    async fn append(&mut self, chains: &[ChainEvents<'_>]) -> Result<Vec<ChainAppend>, StoreError>;
}

/// Which blocks of a chain a listing reads, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSpan {
    /// Blocks whose first position is below this one.
    pub below_first_seq: i64,
    /// …and at or above this one.
    pub min_first_seq: i64,
    /// Blocks holding an event at or after this instant (by their latest time), if given.
    pub from: Option<OffsetDateTime>,
    /// Blocks holding an event before this instant (by their earliest time), if given.
    pub to: Option<OffsetDateTime>,
}

/// The audit trail's chains (see [`crate`]).
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Appends `events` to their chains in one transaction, one block per chain: each chain's
    /// head is locked, its events sealed after it ([`crate::block::seal`]) and stored, and the head
    /// advanced, so concurrent writers (other processes) never fork a chain. A chain whose
    /// block cannot be written (a record already at its next position: planted, or left by an
    /// earlier failure) fails alone, reported in its [`ChainAppend`]; the others commit. The
    /// outer `Err` is for the transaction as a whole (the database is unreachable).
    async fn append_audit_events(
        &self,
        events: &[AuditEvent],
    ) -> Result<Vec<ChainAppend>, StoreError>;
    /// An appender for the one writer of this process ([`crate::writer::AuditWriter`]), with a
    /// connection of its own.
    async fn audit_appender(&self) -> Result<Box<dyn AuditAppender>, StoreError>;
    /// Every chain's head (deployment-wide: for verification).
    async fn audit_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError>;
    /// One chain's head, if it has one.
    async fn audit_chain_head(
        &self,
        chain: Option<TenantId>,
    ) -> Result<Option<ChainHead>, StoreError>;
    /// Up to `limit` blocks of one chain with a first position above `after_first_seq`, in
    /// order: every stored block, whatever its position (verification walks them all).
    async fn audit_blocks(
        &self,
        chain: Option<TenantId>,
        after_first_seq: i64,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError>;
    /// Up to `limit` blocks of one chain holding an event after position `seq`, in order (a
    /// webhook's deliverer reads on from its cursor).
    async fn audit_blocks_after_seq(
        &self,
        chain: Option<TenantId>,
        seq: i64,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError>;
    /// Up to `limit` blocks of one chain within `span`, newest first.
    async fn audit_blocks_desc(
        &self,
        chain: Option<TenantId>,
        span: &BlockSpan,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError>;
    /// Removes the blocks all of whose events occurred before `before` from the start of every
    /// chain, recording each removal in its chain ([`AuditEvent::pruning`]) and in its head
    /// (the last removed position and hash); returns how many events were removed.
    async fn prune_audit_events(&self, before: OffsetDateTime) -> Result<u64, StoreError>;
}
