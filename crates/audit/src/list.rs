//! `GET /audit-events`: a tenant's events, newest first in chain order, read from blocks.
//!
//! Only events the chain's head vouches for are listed (positions after what retention
//! removed, up to the head): a record planted beyond the head is never shown as the newest
//! event. Without filters the page is found by position, reading only the
//! blocks that hold it; with filters the blocks are read newest first and filtered in memory,
//! the store skipping blocks outside a `from`/`to` range by their time bounds (the trail keeps
//! no per-event index: each index entry would be paid by every proxied request).

use crate::{
    block::AuditBlock,
    store::{AuditStore, BlockSpan},
};
use tessera_domain::audit::{AuditFilter, ChainedEvent};
use tessera_domain::{
    error::StoreError,
    ids::TenantId,
    pagination::{Page, PageRequest},
};

/// Blocks read per query.
const LIST_BLOCKS: u32 = 32;

/// A page of `tenant`'s events matching `filter`, newest first.
pub async fn list(
    store: &dyn AuditStore,
    tenant: TenantId,
    filter: &AuditFilter,
    page: PageRequest,
) -> Result<Page<ChainedEvent>, StoreError> {
    let mut answer = Page {
        items: Vec::new(),
        total_items: 0,
        request: page,
    };
    let Some(head) = store.audit_chain_head(Some(tenant)).await? else {
        return Ok(answer);
    };
    let (lo, hi) = (head.pruned_seq + 1, head.last_seq);
    if hi < lo {
        return Ok(answer);
    }
    let (offset, size) = (page.offset(), u64::from(page.size()));
    // Without filters every position in range is an event: the page is known by position.
    let by_position = filter.is_empty();
    let floor = if by_position {
        answer.total_items = u64::try_from(hi - lo + 1).unwrap_or(0);
        let top = hi.saturating_sub(i64::try_from(offset).unwrap_or(i64::MAX));
        if top < lo {
            return Ok(answer);
        }
        (top - i64::try_from(size).unwrap_or(i64::MAX) + 1).max(lo)
    } else {
        lo
    };
    let mut below = hi.saturating_add(1);
    let mut matched = 0u64;
    'walk: loop {
        let span = BlockSpan {
            below_first_seq: below,
            min_first_seq: lo,
            from: filter.from,
            to: filter.to,
        };
        let blocks = store
            .audit_blocks_desc(Some(tenant), &span, LIST_BLOCKS)
            .await?;
        let Some(last) = blocks.last().map(|b| b.first_seq) else {
            break;
        };
        for block in &blocks {
            for event in newest_first(block)? {
                if event.seq > hi || event.seq < lo || !filter.matches(&event.event) {
                    continue;
                }
                if by_position {
                    if event.seq < floor {
                        break 'walk;
                    }
                    if answer.items.len() < usize::try_from(size).unwrap_or(usize::MAX)
                        && event.seq <= hi - i64::try_from(offset).unwrap_or(i64::MAX)
                    {
                        answer.items.push(event);
                    }
                    continue;
                }
                if matched >= offset && (answer.items.len() as u64) < size {
                    answer.items.push(event);
                }
                matched += 1;
            }
        }
        below = last;
    }
    if !by_position {
        answer.total_items = matched;
    }
    Ok(answer)
}

/// A block's events, newest first.
fn newest_first(block: &AuditBlock) -> Result<Vec<ChainedEvent>, StoreError> {
    let mut events = block
        .events()
        .map_err(|e| StoreError::Corrupt(format!("audit block at {}: {e}", block.first_seq)))?;
    events.reverse();
    Ok(events)
}
