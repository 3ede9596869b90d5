//! The audit trail's storage on both backends: chains per tenant, listing with every filter
//! newest first, concurrent appends that never fork a chain, verification that catches rows
//! altered or deleted directly in the database, and retention that leaves a verifiable chain.

use std::sync::Arc;

use tessera_domain::{
    audit::{self, Actor, AuditAction, AuditEvent, AuditFilter, Outcome},
    store::AuditStore,
    ApplicationId, PageRequest, TenantId,
};
use tessera_testkit::{backend_tests, db::TestDatabase};
use time::Duration;
use uuid::Uuid;

backend_tests!(
    chains_are_per_tenant_and_listed_newest_first,
    every_filter_narrows_the_list,
    concurrent_appends_never_fork_a_chain,
    verification_names_an_altered_event,
    verification_names_a_deleted_event_and_a_cut_end,
    retention_keeps_the_rest_verifiable,
);

fn page(n: i64, size: i64) -> PageRequest {
    PageRequest::new(Some(n), Some(size)).expect("page")
}

fn created(tenant: TenantId, actor: ApplicationId, token: Uuid) -> AuditEvent {
    AuditEvent::success(
        tenant,
        AuditAction::TokenCreated,
        Actor::Application(actor),
        vec![token],
    )
}

async fn chains_are_per_tenant_and_listed_newest_first(t: &TestDatabase) {
    let (a, b) = (TenantId::new(), TenantId::new());
    let app = ApplicationId::new();
    let mut ids = Vec::new();
    for i in 0..5 {
        let token = Uuid::new_v4();
        ids.push(token);
        let mut events = vec![created(a, app, token).with_request_id(&format!("req-{i}"))];
        events.push(created(b, app, Uuid::new_v4()));
        t.db.append_audit_events(&events).await.expect("append");
    }
    let refusal = AuditEvent::denied(
        None,
        AuditAction::TokenRead,
        Actor::Anonymous,
        vec![],
        "unknown API key",
    );
    let stored = t.db.append_audit_events(&[refusal]).await.expect("append");
    assert_eq!(stored[0].seq, 1, "the deployment chain starts at 1");

    let listed =
        t.db.list_audit_events(a, &AuditFilter::default(), page(1, 3))
            .await
            .expect("list");
    assert_eq!(listed.total_items, 5, "only tenant a's events");
    let seqs: Vec<i64> = listed.items.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![5, 4, 3], "newest first");
    assert!(listed.items.iter().all(|e| e.event.tenant_id == Some(a)));
    assert_eq!(listed.items[0].event.resource_ids, vec![ids[4]]);
    assert_eq!(listed.items[0].event.request_id.as_deref(), Some("req-4"));
    let second =
        t.db.list_audit_events(a, &AuditFilter::default(), page(2, 3))
            .await
            .expect("list");
    let seqs: Vec<i64> = second.items.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![2, 1]);
    assert_eq!(second.items[1].prev_hash, audit::GENESIS);
    assert_eq!(second.items[0].prev_hash, second.items[1].hash, "linked");

    let report = audit::verify(&t.db, None).await.expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 11);
    assert_eq!(report.chains.len(), 3, "a, b and the deployment chain");
    let only_b = audit::verify(&t.db, Some(b)).await.expect("verify");
    assert_eq!(only_b.events_checked, 5);
}

async fn every_filter_narrows_the_list(t: &TestDatabase) {
    let tenant = TenantId::new();
    let (alice, bob) = (ApplicationId::new(), ApplicationId::new());
    let token = Uuid::new_v4();
    let first = created(tenant, alice, token);
    t.db.append_audit_events(std::slice::from_ref(&first))
        .await
        .expect("append");
    let read = AuditEvent::success(
        tenant,
        AuditAction::TokenRead,
        Actor::Application(bob),
        vec![token, Uuid::new_v4()],
    );
    let denied = AuditEvent::denied(
        Some(tenant),
        AuditAction::TokenDeleted,
        Actor::Application(bob),
        vec![token],
        "missing permission token:delete",
    );
    let other = created(tenant, alice, Uuid::new_v4());
    t.db.append_audit_events(&[read.clone(), denied.clone(), other.clone()])
        .await
        .expect("append");

    let ids = |filter: AuditFilter| async move {
        t.db.list_audit_events(tenant, &filter, page(1, 100))
            .await
            .expect("list")
            .items
            .into_iter()
            .map(|e| e.event.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(AuditFilter {
            actions: vec![AuditAction::TokenRead, AuditAction::TokenDeleted],
            ..AuditFilter::default()
        })
        .await,
        vec![denied.id, read.id]
    );
    assert_eq!(
        ids(AuditFilter {
            resource_id: Some(token),
            ..AuditFilter::default()
        })
        .await,
        vec![denied.id, read.id, first.id]
    );
    assert_eq!(
        ids(AuditFilter {
            actor: Some(Actor::Application(alice)),
            ..AuditFilter::default()
        })
        .await,
        vec![other.id, first.id]
    );
    assert_eq!(
        ids(AuditFilter {
            outcome: Some(Outcome::Denied),
            ..AuditFilter::default()
        })
        .await,
        vec![denied.id]
    );
    let stored =
        t.db.list_audit_events(tenant, &AuditFilter::default(), page(1, 100))
            .await
            .expect("list");
    assert_eq!(
        stored.items[1].event.reason.as_deref(),
        Some("missing permission token:delete")
    );
    let at = first.occurred_at;
    assert_eq!(
        ids(AuditFilter {
            to: Some(at + Duration::microseconds(1)),
            ..AuditFilter::default()
        })
        .await
        .last(),
        Some(&first.id),
        "`to` includes what came before it"
    );
    assert!(
        ids(AuditFilter {
            to: Some(at),
            ..AuditFilter::default()
        })
        .await
        .is_empty(),
        "`to` is exclusive"
    );
    assert!(ids(AuditFilter {
        from: Some(other.occurred_at + Duration::seconds(1)),
        ..AuditFilter::default()
    })
    .await
    .is_empty());
    assert_eq!(
        ids(AuditFilter {
            from: Some(at),
            ..AuditFilter::default()
        })
        .await
        .len(),
        4,
        "`from` is inclusive"
    );
    // Another tenant sees none of it, whatever the filter.
    let stranger =
        t.db.list_audit_events(
            TenantId::new(),
            &AuditFilter {
                resource_id: Some(token),
                ..AuditFilter::default()
            },
            page(1, 100),
        )
        .await
        .expect("list");
    assert_eq!(stranger.total_items, 0);
}

async fn concurrent_appends_never_fork_a_chain(t: &TestDatabase) {
    let tenant = TenantId::new();
    let app = ApplicationId::new();
    let db = Arc::new(t.db.clone());
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                let events = vec![
                    created(tenant, app, Uuid::new_v4()),
                    created(tenant, app, Uuid::new_v4()),
                ];
                db.append_audit_events(&events).await.expect("append");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let report = audit::verify(&t.db, Some(tenant)).await.expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 160);
}

/// Stores three events for one tenant and returns their ids in chain order.
async fn three(t: &TestDatabase, tenant: TenantId) -> Vec<Uuid> {
    let app = ApplicationId::new();
    let events: Vec<AuditEvent> = (0..3)
        .map(|_| created(tenant, app, Uuid::new_v4()))
        .collect();
    t.db.append_audit_events(&events).await.expect("append");
    assert!(audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify")
        .ok());
    events.iter().map(|e| e.id).collect()
}

async fn verification_names_an_altered_event(t: &TestDatabase) {
    let tenant = TenantId::new();
    let ids = three(t, tenant).await;
    t.execute(&format!(
        "UPDATE audit_events SET actor = 'anonymous' WHERE event_id = '{}'",
        ids[1]
    ))
    .await;
    let report = audit::verify(&t.db, Some(tenant)).await.expect("verify");
    let broken = report.broken.expect("the edit is detected");
    assert_eq!(broken.event_id, Some(ids[1]));
    assert_eq!(broken.seq, 2);
    assert!(broken.problem.contains("altered"), "{}", broken.problem);
    assert_eq!(report.events_checked, 1, "the walk stops at the break");
}

async fn verification_names_a_deleted_event_and_a_cut_end(t: &TestDatabase) {
    let tenant = TenantId::new();
    let ids = three(t, tenant).await;
    t.execute(&format!(
        "DELETE FROM audit_events WHERE event_id = '{}'",
        ids[1]
    ))
    .await;
    let broken = audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify")
        .broken
        .expect("the deletion is detected");
    assert_eq!(broken.event_id, Some(ids[2]), "the event after the gap");
    assert!(
        broken.problem.contains("events 2 to 2 are missing"),
        "{}",
        broken.problem
    );

    // Cutting the end of a chain is caught by its head.
    let other = TenantId::new();
    let ids = three(t, other).await;
    t.execute(&format!(
        "DELETE FROM audit_events WHERE event_id = '{}'",
        ids[2]
    ))
    .await;
    let broken = audit::verify(&t.db, Some(other))
        .await
        .expect("verify")
        .broken
        .expect("the cut is detected");
    assert_eq!(broken.seq, 3);
    assert_eq!(
        broken.event_id,
        Some(ids[2]),
        "the head names the last event"
    );
}

async fn retention_keeps_the_rest_verifiable(t: &TestDatabase) {
    let tenant = TenantId::new();
    let app = ApplicationId::new();
    let mut old = created(tenant, app, Uuid::new_v4());
    old.occurred_at -= Duration::days(400);
    let mut older = created(tenant, app, Uuid::new_v4());
    older.occurred_at -= Duration::days(500);
    let recent = created(tenant, app, Uuid::new_v4());
    t.db.append_audit_events(&[older, old, recent.clone()])
        .await
        .expect("append");
    let removed =
        t.db.prune_audit_events(tessera_domain::timestamp::now() - Duration::days(365))
            .await
            .expect("prune");
    assert_eq!(removed, 2);
    let left =
        t.db.list_audit_events(tenant, &AuditFilter::default(), page(1, 10))
            .await
            .expect("list");
    assert_eq!(left.items.len(), 1);
    assert_eq!(left.items[0].event.id, recent.id);
    let report = audit::verify(&t.db, Some(tenant)).await.expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 1);
    // Appending after a prune continues the chain.
    t.db.append_audit_events(&[created(tenant, app, Uuid::new_v4())])
        .await
        .expect("append");
    assert!(audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify")
        .ok());
    // A second sweep with nothing old is a no-op.
    assert_eq!(
        t.db.prune_audit_events(tessera_domain::timestamp::now() - Duration::days(365))
            .await
            .expect("prune"),
        0
    );
}
