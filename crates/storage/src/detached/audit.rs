//! The audit trail: [`AuditStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::audit::AuditEvent;

use tessera_audit::AuditStore;
use tessera_audit::{AuditAppender, AuditBlock, BlockSpan, ChainAppend, ChainHead};
use tessera_domain::store::StoreError;
use tessera_domain::TenantId;
use time::OffsetDateTime;

detached! {
    AuditStore {
        spawned fn append_audit_events(events: &[AuditEvent]) -> Vec<ChainAppend>;
        // On the caller's runtime: the appender's connection belongs to the writer's thread.
        caller fn audit_appender() -> Box<dyn AuditAppender>;
        spawned fn audit_chain_heads() -> Vec<ChainHead>;
        spawned fn audit_chain_head(chain: Option<TenantId>) -> Option<ChainHead>;
        scan fn audit_blocks(chain: Option<TenantId>, after_first_seq: i64, limit: u32) -> Vec<AuditBlock>;
        scan fn audit_blocks_after_seq(chain: Option<TenantId>, seq: i64, limit: u32) -> Vec<AuditBlock>;
        scan fn audit_blocks_desc(chain: Option<TenantId>, span: &BlockSpan, limit: u32) -> Vec<AuditBlock>;
        spawned fn prune_audit_events(before: OffsetDateTime) -> u64;
    }
}
