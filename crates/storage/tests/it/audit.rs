//! The audit trail's storage on both backends: chains per tenant stored as blocks, listing
//! with every filter newest first, concurrent appends that never fork a chain, verification
//! that catches records altered, deleted, recased, planted or pruned directly in the database
//! (inside a block and across blocks), a chain that cannot be extended failing alone, retention
//! recorded in the chain, and the move of the first release's per-event rows into blocks.

use std::sync::Arc;

use tessera_audit::{AuditStore, ChainHead};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent, AuditFilter, BrokenLink, ChainedEvent, Outcome},
    store::StoreError,
    ApplicationId, Page, PageRequest, TenantId,
};
use tessera_storage::Backend;
use tessera_testkit::{backend_tests, db::TestDatabase};
use time::Duration;
use uuid::Uuid;

backend_tests!(
    chains_are_per_tenant_and_listed_newest_first,
    action_resource_actor_and_outcome_filters_narrow_the_list,
    time_filters_bound_the_list,
    concurrent_appends_never_fork_a_chain,
    verification_names_an_altered_event,
    verification_names_a_deleted_event_and_a_cut_end,
    tampering_inside_a_block_and_across_blocks_is_named,
    an_event_that_cannot_be_read_is_named_by_its_id,
    blocks_are_stored_compressed_and_a_damaged_one_is_named,
    a_backlog_is_written_in_bounded_blocks,
    events_retried_after_an_unknown_outcome_are_not_written_twice,
    a_planted_record_fails_its_chain_alone_and_is_reported,
    records_before_the_anchor_are_reported,
    a_deleted_prefix_needs_a_recorded_pruning,
    retention_is_recorded_in_the_chain_and_keeps_it_verifiable,
);

fn page(n: i64, size: i64) -> PageRequest {
    PageRequest::new(Some(n), Some(size)).expect("page")
}

fn created(tenant: TenantId, actor: ApplicationId, token: Uuid) -> AuditEvent {
    AuditEvent::success(
        tenant,
        AuditAction::TokenCreated,
        Actor::Application(actor),
        vec![token.into()],
    )
}

/// Appends `events`, every chain of which must be written; the events as stored.
async fn append(t: &TestDatabase, events: &[AuditEvent]) -> Vec<ChainedEvent> {
    t.db.append_audit_events(events)
        .await
        .expect("append")
        .into_iter()
        .flat_map(|c| c.result.expect("chain written"))
        .flat_map(|b| b.events().expect("decode"))
        .collect()
}

async fn list(
    t: &TestDatabase,
    tenant: TenantId,
    filter: &AuditFilter,
    page: PageRequest,
) -> Page<ChainedEvent> {
    tessera_audit::list(&t.db, tenant, filter, page)
        .await
        .expect("list")
}

async fn broken(t: &TestDatabase, tenant: TenantId) -> BrokenLink {
    tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify")
        .broken
        .expect("the tampering is detected")
}

/// Replaces `from` with `to` in the stored text of `tenant`'s blocks, as someone with write
/// access to the database would.
/// The head of `tenant`'s chain, which must exist.
async fn chain_head(t: &TestDatabase, tenant: TenantId) -> ChainHead {
    t.db.audit_chain_head(Some(tenant))
        .await
        .expect("head")
        .expect("chain")
}

async fn edit_events(t: &TestDatabase, tenant: TenantId, from: &str, to: &str) {
    t.edit_audit_text(Some(tenant), from, to).await;
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
        append(t, &events).await;
    }
    let refusal = AuditEvent::denied(
        None,
        AuditAction::TokenRead,
        Actor::Anonymous,
        vec![],
        "unknown API key",
    );
    let stored = append(t, &[refusal]).await;
    assert_eq!(stored[0].seq, 1, "the deployment chain starts at 1");

    let listed = list(t, a, &AuditFilter::default(), page(1, 3)).await;
    assert_eq!(listed.total_items, 5, "only tenant a's events");
    let seqs: Vec<i64> = listed.items.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![5, 4, 3], "newest first");
    assert!(listed.items.iter().all(|e| e.event.tenant_id == Some(a)));
    assert_eq!(listed.items[0].event.resource_ids, vec![ids[4]]);
    assert_eq!(listed.items[0].event.request_id.as_deref(), Some("req-4"));
    let second = list(t, a, &AuditFilter::default(), page(2, 3)).await;
    let seqs: Vec<i64> = second.items.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![2, 1]);
    assert_eq!(second.items[1].prev_hash, tessera_audit::GENESIS);
    assert_eq!(second.items[0].prev_hash, second.items[1].hash, "linked");
    let past = list(t, a, &AuditFilter::default(), page(3, 3)).await;
    assert!(past.items.is_empty() && past.total_items == 5);

    let report = tessera_audit::verify(&t.db, None).await.expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 11);
    assert_eq!(report.chains.len(), 3, "a, b and the deployment chain");
    let only_b = tessera_audit::verify(&t.db, Some(b)).await.expect("verify");
    assert_eq!(only_b.events_checked, 5);
}

/// Four events of one tenant, oldest first: alice creates `token`, bob reads it (and another),
/// bob is refused its deletion, alice creates another token.
struct FourEvents {
    tenant: TenantId,
    alice: ApplicationId,
    token: Uuid,
    first: AuditEvent,
    read: AuditEvent,
    denied: AuditEvent,
    other: AuditEvent,
}

async fn four_events(t: &TestDatabase) -> FourEvents {
    let tenant = TenantId::new();
    let (alice, bob) = (ApplicationId::new(), ApplicationId::new());
    let token = Uuid::new_v4();
    let first = created(tenant, alice, token);
    append(t, std::slice::from_ref(&first)).await;
    let read = AuditEvent::success(
        tenant,
        AuditAction::TokenRead,
        Actor::Application(bob),
        vec![token.into(), Uuid::new_v4().into()],
    );
    let denied = AuditEvent::denied(
        Some(tenant),
        AuditAction::TokenDeleted,
        Actor::Application(bob),
        vec![token.into()],
        "missing permission token:delete",
    );
    let other = created(tenant, alice, Uuid::new_v4());
    append(t, &[read.clone(), denied.clone(), other.clone()]).await;
    FourEvents {
        tenant,
        alice,
        token,
        first,
        read,
        denied,
        other,
    }
}

/// The ids of `tenant`'s events `filter` finds, newest first.
async fn ids(t: &TestDatabase, tenant: TenantId, filter: AuditFilter) -> Vec<Uuid> {
    list(t, tenant, &filter, page(1, 100))
        .await
        .items
        .into_iter()
        .map(|e| e.event.id)
        .collect()
}

async fn action_resource_actor_and_outcome_filters_narrow_the_list(t: &TestDatabase) {
    let e = four_events(t).await;
    let by_resource = AuditFilter {
        resource_id: Some(e.token.into()),
        ..AuditFilter::default()
    };
    for (filter, found) in [
        (
            AuditFilter {
                actions: vec![AuditAction::TokenRead, AuditAction::TokenDeleted],
                ..AuditFilter::default()
            },
            vec![e.denied.id, e.read.id],
        ),
        (
            by_resource.clone(),
            vec![e.denied.id, e.read.id, e.first.id],
        ),
        (
            AuditFilter {
                actor: Some(Actor::Application(e.alice)),
                ..AuditFilter::default()
            },
            vec![e.other.id, e.first.id],
        ),
        (
            AuditFilter {
                outcome: Some(Outcome::Denied),
                ..AuditFilter::default()
            },
            vec![e.denied.id],
        ),
    ] {
        assert_eq!(ids(t, e.tenant, filter.clone()).await, found, "{filter:?}");
    }
    let stored = list(t, e.tenant, &AuditFilter::default(), page(1, 100)).await;
    assert_eq!(
        stored.items[1].event.reason.as_deref(),
        Some("missing permission token:delete")
    );
    // Another tenant sees none of it, whatever the filter.
    let stranger = list(t, TenantId::new(), &by_resource, page(1, 100)).await;
    assert_eq!(stranger.total_items, 0);
}

async fn time_filters_bound_the_list(t: &TestDatabase) {
    let e = four_events(t).await;
    let at = e.first.occurred_at;
    let until = |to| AuditFilter {
        to: Some(to),
        ..AuditFilter::default()
    };
    assert_eq!(
        ids(t, e.tenant, until(at + Duration::microseconds(1)))
            .await
            .last(),
        Some(&e.first.id),
        "`to` includes what came before it"
    );
    assert!(
        ids(t, e.tenant, until(at)).await.is_empty(),
        "`to` is exclusive"
    );
    let since = |from| AuditFilter {
        from: Some(from),
        ..AuditFilter::default()
    };
    let later = e.other.occurred_at + Duration::seconds(1);
    assert!(ids(t, e.tenant, since(later)).await.is_empty());
    assert_eq!(
        ids(t, e.tenant, since(at)).await.len(),
        4,
        "`from` is inclusive"
    );
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
                let outcome = db.append_audit_events(&events).await.expect("append");
                assert!(outcome.iter().all(|c| c.result.is_ok()));
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let report = tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 160);
}

/// Stores three events for one tenant, in one block, and returns their ids in chain order.
async fn three(t: &TestDatabase, tenant: TenantId) -> Vec<Uuid> {
    let app = ApplicationId::new();
    let events: Vec<AuditEvent> = (0..3)
        .map(|_| created(tenant, app, Uuid::new_v4()))
        .collect();
    append(t, &events).await;
    assert!(tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify")
        .ok());
    events.iter().map(|e| e.id).collect()
}

async fn verification_names_an_altered_event(t: &TestDatabase) {
    let tenant = TenantId::new();
    let ids = three(t, tenant).await;
    let middle = list(t, tenant, &AuditFilter::default(), page(1, 10))
        .await
        .items[1]
        .event
        .resource_ids[0]
        .to_string();
    edit_events(t, tenant, &middle, &Uuid::new_v4().to_string()).await;
    let report = tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify");
    let broken = report.broken.expect("the edit is detected");
    assert_eq!(broken.event_id, Some(ids[1]));
    assert_eq!(broken.seq, 2);
    assert!(broken.problem.contains("altered"), "{}", broken.problem);
    assert_eq!(report.events_checked, 1, "the walk stops at the break");
}

async fn verification_names_a_deleted_event_and_a_cut_end(t: &TestDatabase) {
    let tenant = TenantId::new();
    let ids: Vec<Uuid> = [
        three(t, tenant).await,
        three(t, tenant).await,
        three(t, tenant).await,
    ]
    .concat();
    t.execute(&format!(
        "DELETE FROM audit_blocks WHERE tenant_id = '{tenant}' AND first_seq = 4"
    ))
    .await;
    let b = broken(t, tenant).await;
    assert_eq!(b.event_id, Some(ids[6]), "the event after the gap");
    assert!(
        b.problem.contains("events 4 to 6 are missing"),
        "{}",
        b.problem
    );

    // Cutting the end of a chain is caught by its head.
    let other = TenantId::new();
    let ids = [three(t, other).await, three(t, other).await].concat();
    t.execute(&format!(
        "DELETE FROM audit_blocks WHERE tenant_id = '{other}' AND first_seq = 4"
    ))
    .await;
    let b = broken(t, other).await;
    assert_eq!(b.seq, 4);
    assert_eq!(b.event_id, Some(ids[5]), "the head names the last event");
}

/// an edit inside a block names the event; a block moved, or one whose link to the
/// previous block was rewritten, is named at the boundary.
async fn tampering_inside_a_block_and_across_blocks_is_named(t: &TestDatabase) {
    let tenant = TenantId::new();
    let ids = [three(t, tenant).await, three(t, tenant).await].concat();
    // Recasing the stored text changes what is hashed.
    let target = ids[4].to_string();
    edit_events(t, tenant, &target, &target.to_uppercase()).await;
    let b = broken(t, tenant).await;
    assert_eq!((b.seq, b.event_id), (5, Some(ids[4])), "{b:?}");
    assert!(b.problem.contains("cannot be read"), "{}", b.problem);
    edit_events(t, tenant, &target.to_uppercase(), &target).await;
    assert!(tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify")
        .ok());

    // Across blocks: the second block's link rewritten.
    let own_first_hash = match t.db.backend() {
        Backend::Sqlite => "substr(hashes, 1, 32)",
        Backend::Postgres => "substring(hashes from 1 for 32)",
    };
    t.execute(&format!(
        "UPDATE audit_blocks SET prev_hash = {own_first_hash} WHERE tenant_id = '{tenant}' AND first_seq = 4"
    ))
    .await;
    let b = broken(t, tenant).await;
    assert_eq!((b.seq, b.event_id), (4, Some(ids[3])));
    assert!(b.problem.contains("prev_hash"), "{}", b.problem);
}

/// Blocks are stored compressed (an event's text does not appear as such in the database's
/// files); one whose stored bytes no longer decompress (damaged, or cut by someone with write
/// access) is named by verification at its position, and the blocks before it still count.
async fn blocks_are_stored_compressed_and_a_damaged_one_is_named(t: &TestDatabase) {
    let tenant = TenantId::new();
    let app = ApplicationId::new();
    let tokens: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for token in &tokens {
        append(t, &[created(tenant, app, *token)]).await;
    }
    let disk = t.stored_bytes().await;
    for token in &tokens {
        let text = token.to_string();
        assert!(
            !disk.windows(text.len()).any(|w| w == text.as_bytes()),
            "an event's text is stored as it is"
        );
    }
    let cut = match t.db.backend() {
        Backend::Sqlite => "substr(events, 1, 12)",
        Backend::Postgres => "substring(events from 1 for 12)",
    };
    t.execute(&format!(
        "UPDATE audit_blocks SET events = {cut} WHERE tenant_id = '{tenant}' AND first_seq = 2"
    ))
    .await;
    let report = tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify");
    let b = report.broken.expect("the damage is detected");
    assert_eq!(b.seq, 2, "{b:?}");
    assert!(b.problem.contains("cannot be read"), "{}", b.problem);
    assert_eq!(report.events_checked, 1);
}

/// A backlog (the writer retrying after an outage) is written in blocks of at most
/// `MAX_BLOCK_EVENTS` events, which chain and verify like any others.
async fn a_backlog_is_written_in_bounded_blocks(t: &TestDatabase) {
    let tenant = TenantId::new();
    let app = ApplicationId::new();
    let events: Vec<AuditEvent> = (0..tessera_audit::MAX_BLOCK_EVENTS + 10)
        .map(|_| created(tenant, app, Uuid::new_v4()))
        .collect();
    let outcome = t.db.append_audit_events(&events).await.expect("append");
    let blocks = outcome[0].result.as_ref().expect("written");
    assert_eq!(
        blocks
            .iter()
            .map(|b| (b.first_seq, b.last_seq))
            .collect::<Vec<_>>(),
        [(1, 1024), (1025, 1034)]
    );
    let report = tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify");
    assert!(report.ok() && report.events_checked == 1034, "{report:?}");
}

/// After a commit whose outcome the writer could not learn (the connection broke as it
/// committed), it retries the same events: those the chain already holds (up to the head's
/// last event) are not written again.
async fn events_retried_after_an_unknown_outcome_are_not_written_twice(t: &TestDatabase) {
    let tenant = TenantId::new();
    let app = ApplicationId::new();
    let events: Vec<AuditEvent> = (0..3)
        .map(|_| created(tenant, app, Uuid::new_v4()))
        .collect();
    append(t, &events).await;
    let again = t.db.append_audit_events(&events).await.expect("retry");
    assert!(again[0]
        .result
        .as_ref()
        .expect("nothing to write")
        .is_empty());
    // Half written: the rest goes on after the head.
    let more: Vec<AuditEvent> = (0..2)
        .map(|_| created(tenant, app, Uuid::new_v4()))
        .collect();
    let mixed: Vec<AuditEvent> = events.iter().chain(&more).cloned().collect();
    let written = append(t, &mixed).await;
    assert_eq!(
        written
            .iter()
            .map(|e| (e.seq, e.event.id))
            .collect::<Vec<_>>(),
        [(4, more[0].id), (5, more[1].id)]
    );
    let report = tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify");
    assert!(report.ok() && report.events_checked == 5, "{report:?}");
}

/// A stored event whose actor was recased no longer decodes; the report still names it by the
/// id its line holds.
async fn an_event_that_cannot_be_read_is_named_by_its_id(t: &TestDatabase) {
    let tenant = TenantId::new();
    let apps: Vec<ApplicationId> = (0..3).map(|_| ApplicationId::new()).collect();
    let events: Vec<AuditEvent> = apps
        .iter()
        .map(|app| created(tenant, *app, Uuid::new_v4()))
        .collect();
    append(t, &events).await;
    let actor = apps[1].to_string();
    edit_events(t, tenant, &actor, &actor.to_uppercase()).await;
    let b = broken(t, tenant).await;
    assert_eq!((b.seq, b.event_id), (2, Some(events[1].id)), "{b:?}");
    assert!(b.problem.contains("cannot be read"), "{}", b.problem);
}

/// A record planted at a chain's next position makes that chain's appends
/// fail — alone — and verification reports the record; nothing is listed from it.
async fn a_planted_record_fails_its_chain_alone_and_is_reported(t: &TestDatabase) {
    let (victim, bystander) = (TenantId::new(), TenantId::new());
    three(t, victim).await;
    t.execute(&format!(
        "INSERT INTO audit_blocks (tenant_id, first_seq, last_seq, earliest_at, latest_at, prev_hash, hashes, events, encoding) \
         SELECT tenant_id, 4, 6, earliest_at, latest_at, prev_hash, hashes, events, encoding FROM audit_blocks \
         WHERE tenant_id = '{victim}' AND first_seq = 1"
    ))
    .await;
    let app = ApplicationId::new();
    let outcomes =
        t.db.append_audit_events(&[
            created(victim, app, Uuid::new_v4()),
            created(bystander, app, Uuid::new_v4()),
        ])
        .await
        .expect("the transaction commits");
    for outcome in &outcomes {
        match outcome.tenant_id {
            Some(t) if t == victim => {
                assert!(matches!(outcome.result, Err(StoreError::Conflict(_))));
            }
            _ => assert_eq!(
                outcome
                    .result
                    .as_ref()
                    .map(|blocks| blocks.iter().map(|b| b.hashes.len() / 32).sum::<usize>())
                    .ok(),
                Some(1)
            ),
        }
    }
    let listed = list(t, victim, &AuditFilter::default(), page(1, 10)).await;
    assert_eq!(listed.total_items, 3, "only what the head vouches for");
    assert!(listed.items.iter().all(|e| e.seq <= 3));
    let b = broken(t, victim).await;
    assert_eq!(b.seq, 4);
    assert!(
        b.problem.contains("after the chain's head"),
        "{}",
        b.problem
    );
    assert!(tessera_audit::verify(&t.db, Some(bystander))
        .await
        .expect("verify")
        .ok());
}

/// Records below what retention left (or at negative positions) are walked
/// and reported, not skipped.
async fn records_before_the_anchor_are_reported(t: &TestDatabase) {
    let tenant = TenantId::new();
    three(t, tenant).await;
    t.execute(&format!(
        "INSERT INTO audit_blocks (tenant_id, first_seq, last_seq, earliest_at, latest_at, prev_hash, hashes, events, encoding) \
         SELECT tenant_id, -5, -3, earliest_at, latest_at, prev_hash, hashes, events, encoding FROM audit_blocks \
         WHERE tenant_id = '{tenant}' AND first_seq = 1"
    ))
    .await;
    let b = broken(t, tenant).await;
    assert_eq!(b.seq, -5);
    assert!(b.problem.contains("at or before"), "{}", b.problem);
    assert_eq!(
        list(t, tenant, &AuditFilter::default(), page(1, 10))
            .await
            .total_items,
        3
    );
}

/// Deleting the oldest events and setting the head's anchor by hand is
/// caught: a real removal appends an `audit.pruned` event naming it.
async fn a_deleted_prefix_needs_a_recorded_pruning(t: &TestDatabase) {
    let tenant = TenantId::new();
    three(t, tenant).await;
    three(t, tenant).await;
    let hashes_of_first = match t.db.backend() {
        Backend::Sqlite => "substr(hashes, 65, 32)",
        Backend::Postgres => "substring(hashes from 65 for 32)",
    };
    t.execute(&format!(
        "UPDATE audit_chains SET pruned_seq = 3, pruned_hash = (SELECT {hashes_of_first} FROM audit_blocks \
         WHERE tenant_id = '{tenant}' AND first_seq = 1) WHERE tenant_id = '{tenant}'; \
         DELETE FROM audit_blocks WHERE tenant_id = '{tenant}' AND first_seq = 1"
    ))
    .await;
    let b = broken(t, tenant).await;
    assert!(b.problem.contains("audit.pruned"), "{}", b.problem);
}

async fn retention_is_recorded_in_the_chain_and_keeps_it_verifiable(t: &TestDatabase) {
    let tenant = TenantId::new();
    let app = ApplicationId::new();
    let mut old = created(tenant, app, Uuid::new_v4());
    old.occurred_at -= Duration::days(400);
    let mut older = created(tenant, app, Uuid::new_v4());
    older.occurred_at -= Duration::days(500);
    let recent = created(tenant, app, Uuid::new_v4());
    // Retention removes whole blocks: the old events are one block, the recent one another.
    append(t, &[older, old]).await;
    append(t, std::slice::from_ref(&recent)).await;
    let head_before = chain_head(t, tenant).await;
    let cutoff = tessera_domain::timestamp::now() - Duration::days(365);
    assert_eq!(t.db.prune_audit_events(cutoff).await.expect("prune"), 2);
    let left = list(t, tenant, &AuditFilter::default(), page(1, 10)).await;
    let actions: Vec<_> = left.items.iter().map(|e| e.event.action).collect();
    assert_eq!(
        actions,
        [AuditAction::AuditPruned, AuditAction::TokenCreated]
    );
    assert_eq!(left.items[1].event.id, recent.id);
    let pruned = left.items[0].event.pruned.expect("what was removed");
    assert_eq!(pruned.through_seq, 2);
    let head = chain_head(t, tenant).await;
    assert_ne!(
        head.last_hash, head_before.last_hash,
        "the removal changes the head"
    );
    assert_eq!((head.pruned_seq, head.pruned_hash), (2, pruned.last_hash));
    let report = tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 2, "the recent event and the pruning");
    // Appending after a prune continues the chain.
    append(t, &[created(tenant, app, Uuid::new_v4())]).await;
    assert!(tessera_audit::verify(&t.db, Some(tenant))
        .await
        .expect("verify")
        .ok());
    // A second sweep with nothing old is a no-op.
    assert_eq!(t.db.prune_audit_events(cutoff).await.expect("prune"), 0);
}
