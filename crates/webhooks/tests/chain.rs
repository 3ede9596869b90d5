//! Reading a tenant's chain from a webhook's cursor on both backends: what was committed is
//! handed on in order from any cursor, also one inside a block; an edit, a removal or a history
//! rewritten by someone with write access to the database stops the reading instead of
//! delivering what is not in the verified chain (docs/webhooks.md, "Delivery").

use tessera_audit::{AuditStore, GENESIS};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent},
    TenantId,
};
use tessera_testkit::{backend_tests, db::TestDatabase};
use tessera_webhooks::{read_after, ChainError};

backend_tests!(
    the_chain_is_read_on_from_any_cursor_in_order,
    an_edited_event_stops_the_reading,
    a_removed_block_stops_the_reading,
    a_rewritten_history_does_not_link_to_the_cursor,
);

/// Appends `n` token events to `tenant`'s chain, one block per call of `per`: their ids.
async fn append(db: &TestDatabase, tenant: TenantId, n: usize, per: usize) -> Vec<uuid::Uuid> {
    let mut ids = Vec::new();
    let events: Vec<AuditEvent> = (0..n)
        .map(|_| {
            let id = uuid::Uuid::new_v4();
            ids.push(id);
            AuditEvent::success(
                tenant,
                AuditAction::TokenCreated,
                Actor::System,
                vec![id.into()],
            )
        })
        .collect();
    for chunk in events.chunks(per) {
        for outcome in db.db.append_audit_events(chunk).await.expect("append") {
            outcome.result.expect("a chain written");
        }
    }
    ids
}

fn token_of(event: &AuditEvent) -> String {
    event.resource_ids[0].to_string()
}

async fn the_chain_is_read_on_from_any_cursor_in_order(db: &TestDatabase) {
    let tenant = TenantId::new();
    let ids = append(db, tenant, 10, 4).await;
    let all = read_after(&db.db, tenant, 0, GENESIS, 100)
        .await
        .expect("read");
    assert_eq!(
        all.iter().map(|l| l.seq).collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    let read: Vec<String> = all.iter().map(|l| token_of(&l.event)).collect();
    assert_eq!(
        read,
        ids.iter().map(ToString::to_string).collect::<Vec<_>>()
    );
    // From inside the second block (positions 5..8), on to the end.
    let rest = read_after(&db.db, tenant, all[5].seq, all[5].hash, 100)
        .await
        .expect("read");
    assert_eq!(rest.first().map(|l| l.seq), Some(7));
    assert_eq!(rest.len(), 4);
    // Caught up: nothing.
    let none = read_after(&db.db, tenant, all[9].seq, all[9].hash, 100)
        .await
        .expect("read");
    assert!(none.is_empty());
    // Another tenant's chain is another chain.
    let other = TenantId::new();
    assert!(read_after(&db.db, other, 0, GENESIS, 100)
        .await
        .expect("read")
        .is_empty());
}

async fn an_edited_event_stops_the_reading(db: &TestDatabase) {
    let tenant = TenantId::new();
    let ids = append(db, tenant, 6, 3).await;
    db.edit_audit_text(
        Some(tenant),
        &ids[4].to_string(),
        &uuid::Uuid::new_v4().to_string(),
    )
    .await;
    let from_start = read_after(&db.db, tenant, 0, GENESIS, 100).await;
    assert!(
        matches!(from_start, Err(ChainError::Broken { .. })),
        "{from_start:?}"
    );
}

async fn a_removed_block_stops_the_reading(db: &TestDatabase) {
    let tenant = TenantId::new();
    append(db, tenant, 6, 2).await;
    let all = read_after(&db.db, tenant, 0, GENESIS, 100)
        .await
        .expect("read");
    db.execute(&format!(
        "DELETE FROM audit_blocks WHERE tenant_id = '{tenant}' AND first_seq = 3"
    ))
    .await;
    let after = read_after(&db.db, tenant, all[1].seq, all[1].hash, 100).await;
    assert!(matches!(after, Err(ChainError::Broken { .. })), "{after:?}");
}

async fn a_rewritten_history_does_not_link_to_the_cursor(db: &TestDatabase) {
    let tenant = TenantId::new();
    append(db, tenant, 4, 4).await;
    let all = read_after(&db.db, tenant, 0, GENESIS, 100)
        .await
        .expect("read");
    let cursor = (all[1].seq, all[1].hash);
    // Someone with write access replaces the chain with one of their own, hashes and all.
    db.execute(&format!(
        "DELETE FROM audit_blocks WHERE tenant_id = '{tenant}'"
    ))
    .await;
    db.execute(&format!(
        "DELETE FROM audit_chains WHERE tenant_id = '{tenant}'"
    ))
    .await;
    append(db, tenant, 4, 4).await;
    let forged = read_after(&db.db, tenant, cursor.0, cursor.1, 100).await;
    assert!(
        matches!(forged, Err(ChainError::Broken { .. })),
        "{forged:?}"
    );
}
