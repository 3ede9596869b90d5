//! `api audit verify` and the console's Verify button: every chain re-walked from what
//! retention left to its head.

use tessera_domain::{
    audit::{ChainReport, VerifyReport},
    error::StoreError,
    ids::TenantId,
};

use crate::{chain::ChainCheck, head::head_json, store::AuditStore};

/// Blocks read per query while verifying.
const VERIFY_BLOCKS: u32 = 64;

/// Re-walks the chains (all, or `tenant`'s only): every stored block of each, also those
/// outside what its head vouches for, from what retention left to the head. Events appended
/// while it runs are past the heads it read and are reported as outside them only if their
/// block was stored before the heads were read; run it again to be sure of such a report.
pub async fn verify(
    store: &dyn AuditStore,
    tenant: Option<TenantId>,
) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport {
        events_checked: 0,
        chains: Vec::new(),
        broken: None,
    };
    for head in store.audit_chain_heads().await? {
        if tenant.is_some() && head.tenant_id != tenant {
            continue;
        }
        let anchor = head_json(&head);
        let chain = head.tenant_id;
        let mut check = ChainCheck::new(head);
        let mut after = i64::MIN;
        let mut broken = None;
        'walk: loop {
            let blocks = store.audit_blocks(chain, after, VERIFY_BLOCKS).await?;
            let Some(end) = blocks.last().map(|b| b.first_seq) else {
                break;
            };
            for block in &blocks {
                if let Err(b) = check.check_block(block) {
                    broken = Some(b);
                    break 'walk;
                }
            }
            after = end;
        }
        let checked = check.checked();
        if broken.is_none() {
            broken = check.finish().err();
        }
        report.events_checked += checked;
        if report.broken.is_none() {
            report.broken.clone_from(&broken);
        }
        report.chains.push(ChainReport {
            tenant_id: chain,
            events_checked: checked,
            head: anchor,
            broken,
        });
    }
    Ok(report)
}
