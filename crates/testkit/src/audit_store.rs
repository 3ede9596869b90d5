//! An in-memory [`AuditStore`]: chains and blocks kept in memory, with knobs for a test to make
//! appends fail, conflict or take no time. The audit writer's tests run over it.

use std::{
    collections::{BTreeMap, HashSet},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use async_trait::async_trait;
use tessera_audit::{
    seal_encoded, AuditAppender, AuditBlock, AuditStore, BlockSpan, ChainAppend, ChainEvents,
    ChainHead, EncodedEvent, EncodedEvents,
};
use tessera_domain::{
    audit::{AuditEvent, ChainedEvent},
    store::StoreError,
    TenantId,
};
use time::OffsetDateTime;

/// A store that keeps chains in memory, counts transactions, fails the first `failures`
/// appends, and refuses to extend the chains in `planted` (as a record at their next
/// position would).
#[derive(Debug, Default)]
pub struct MemoryAuditStore(Arc<MemoryAuditState>);

impl std::ops::Deref for MemoryAuditStore {
    type Target = MemoryAuditState;

    fn deref(&self) -> &MemoryAuditState {
        &self.0
    }
}

/// The appender of a [`MemoryAuditStore`].
struct MemoryAppender(Arc<MemoryAuditState>);

#[async_trait]
impl AuditAppender for MemoryAppender {
    async fn append(&mut self, chains: &[ChainEvents<'_>]) -> Result<Vec<ChainAppend>, StoreError> {
        self.0.append(chains).await
    }
}

/// What a [`MemoryAuditStore`] holds, and the knobs a test turns.
#[derive(Debug, Default)]
pub struct MemoryAuditState {
    /// Each chain's head.
    pub heads: Mutex<BTreeMap<Option<TenantId>, ChainHead>>,
    /// Every block written.
    pub blocks: Mutex<Vec<AuditBlock>>,
    /// Transactions committed.
    pub appends: AtomicUsize,
    /// How many of the next appends fail (the store is down).
    pub failures: AtomicUsize,
    /// Chains whose next position is taken (a planted record): their appends conflict.
    pub planted: Mutex<HashSet<Option<TenantId>>>,
    /// Appends take no time (the default is 5 ms, so that submissions pile up).
    pub quick: std::sync::atomic::AtomicBool,
}

impl MemoryAuditState {
    async fn append(&self, chains: &[ChainEvents<'_>]) -> Result<Vec<ChainAppend>, StoreError> {
        if self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(StoreError::Unavailable("down".into()));
        }
        self.appends.fetch_add(1, Ordering::SeqCst);
        // Let submissions pile up behind a slow transaction.
        if !self.quick.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let planted = self.planted.lock().expect("planted").clone();
        let mut heads = self.heads.lock().expect("heads");
        Ok(chains
            .iter()
            .map(|c| {
                let result = if planted.contains(&c.chain) {
                    Err(StoreError::Conflict("duplicate key".into()))
                } else {
                    let head = heads
                        .entry(c.chain)
                        .or_insert_with(|| ChainHead::empty(c.chain));
                    let block = seal_encoded(head, &c.events);
                    self.blocks.lock().expect("blocks").push(block.clone());
                    Ok(vec![block])
                };
                ChainAppend {
                    tenant_id: c.chain,
                    result,
                }
            })
            .collect())
    }

    /// The events committed to `chain`, decoded from its blocks.
    pub fn events(&self, chain: Option<TenantId>) -> Vec<ChainedEvent> {
        self.blocks
            .lock()
            .expect("blocks")
            .iter()
            .filter(|b| b.tenant_id == chain)
            .flat_map(|b| b.events().expect("decode"))
            .collect()
    }
}

#[async_trait]
impl AuditStore for MemoryAuditStore {
    async fn append_audit_events(
        &self,
        events: &[AuditEvent],
    ) -> Result<Vec<ChainAppend>, StoreError> {
        let encoded = EncodedEvents::of(events);
        let mut chains: BTreeMap<Option<TenantId>, Vec<EncodedEvent<'_>>> = BTreeMap::new();
        for e in encoded.iter() {
            chains.entry(e.chain).or_default().push(e);
        }
        let chains: Vec<ChainEvents<'_>> = chains
            .into_iter()
            .map(|(chain, events)| ChainEvents { chain, events })
            .collect();
        self.append(&chains).await
    }
    async fn audit_appender(&self) -> Result<Box<dyn AuditAppender>, StoreError> {
        Ok(Box::new(MemoryAppender(self.0.clone())))
    }
    async fn audit_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
        Ok(self
            .heads
            .lock()
            .expect("heads")
            .values()
            .cloned()
            .collect())
    }
    async fn audit_chain_head(
        &self,
        chain: Option<TenantId>,
    ) -> Result<Option<ChainHead>, StoreError> {
        Ok(self.heads.lock().expect("heads").get(&chain).cloned())
    }
    async fn audit_blocks(
        &self,
        chain: Option<TenantId>,
        after: i64,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        let mut blocks: Vec<AuditBlock> = self
            .blocks
            .lock()
            .expect("blocks")
            .iter()
            .filter(|b| b.tenant_id == chain && b.first_seq > after)
            .cloned()
            .collect();
        blocks.sort_by_key(|b| b.first_seq);
        blocks.truncate(limit as usize);
        Ok(blocks)
    }
    async fn audit_blocks_after_seq(
        &self,
        chain: Option<TenantId>,
        seq: i64,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        let mut blocks: Vec<AuditBlock> = self
            .blocks
            .lock()
            .expect("blocks")
            .iter()
            .filter(|b| b.tenant_id == chain && b.last_seq > seq)
            .cloned()
            .collect();
        blocks.sort_by_key(|b| b.first_seq);
        blocks.truncate(limit as usize);
        Ok(blocks)
    }
    async fn audit_blocks_desc(
        &self,
        _: Option<TenantId>,
        _: &BlockSpan,
        _: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        unimplemented!("not used by the writer")
    }
    async fn prune_audit_events(&self, _: OffsetDateTime) -> Result<u64, StoreError> {
        Ok(0)
    }
}
