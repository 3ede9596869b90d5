//! The audit writer's behaviour over an in-memory store ([`MemoryAuditStore`]): grouping,
//! failures, folding, windows.

use std::{
    io::Write,
    sync::{atomic::Ordering, Arc, Mutex},
    time::Duration,
};

use tessera_audit::{DENIAL_WINDOW, LANE_LIMIT};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditError, AuditEvent, AuditLog, Durability},
    TenantId,
};
use tessera_testkit::audit_store::MemoryAuditStore;

fn event(tenant: TenantId) -> AuditEvent {
    AuditEvent::success(
        tenant,
        AuditAction::TokenRead,
        Actor::Anonymous,
        vec![uuid::Uuid::new_v4().into()],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_share_commits_and_form_one_chain() {
    let store = Arc::new(MemoryAuditStore::default());
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Sync, None);
    tokio::spawn(writer.run());
    let tenant = TenantId::new();
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            log.record(vec![event(tenant)]).await
        }));
    }
    for task in tasks {
        task.await
            .expect("task")
            .expect("committed before returning");
    }
    assert_eq!(store.events(Some(tenant)).len(), 200);
    let stats = log.stats().expect("on");
    assert_eq!(stats.events_committed, 200);
    assert_eq!(stats.queued, 0);
    let appends = store.appends.load(Ordering::SeqCst);
    assert_eq!(stats.batches_committed, appends as u64);
    assert!(
        appends < 200,
        "grouped: {appends} transactions for 200 requests"
    );
    let report = tessera_audit::verify(store.as_ref(), Some(tenant))
        .await
        .expect("verify");
    assert!(report.ok() && report.events_checked == 200, "{report:?}");
}

#[tokio::test]
async fn a_failed_commit_answers_the_waiter_and_is_retried() {
    let store = Arc::new(MemoryAuditStore::default());
    store.failures.store(1, Ordering::SeqCst);
    let stream = Arc::new(Mutex::new(Vec::new()));
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("stream").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let (log, writer) = tessera_audit::start(
        store.clone(),
        Durability::Sync,
        Some(Box::new(Shared(stream.clone()))),
    );
    tokio::spawn(writer.run());
    let tenant = TenantId::new();
    let refused = log.record(vec![event(tenant)]).await;
    assert!(
        matches!(refused, Err(AuditError::Unavailable(_))),
        "{refused:?}"
    );
    // The writer kept the event and wrote it once the store recovered.
    log.record(vec![event(tenant)]).await.expect("committed");
    assert_eq!(store.events(Some(tenant)).len(), 2);
    assert_eq!(log.stats().expect("on").commit_failures, 1);
    let lines = stream.lock().expect("stream").clone();
    assert_eq!(lines.iter().filter(|b| **b == b'\n').count(), 2);
}

#[tokio::test]
async fn async_mode_returns_at_once_and_flush_commits() {
    let store = Arc::new(MemoryAuditStore::default());
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Async, None);
    let tenant = TenantId::new();
    // The writer is not running yet: async submissions still return.
    log.record(vec![event(tenant), event(tenant)])
        .await
        .expect("queued");
    assert!(store.events(Some(tenant)).is_empty());
    tokio::spawn(writer.run());
    log.flush().await;
    assert_eq!(store.events(Some(tenant)).len(), 2);
    // Off records nothing and never fails.
    AuditLog::off()
        .record(vec![event(tenant)])
        .await
        .expect("off");
    assert!(AuditLog::off().stats().is_none());
}

/// A chain that cannot be extended fails alone. Its requests are told
/// (503), its events are held, counted and written once the chain is repaired; the other
/// tenants' events commit meanwhile.
#[tokio::test]
async fn a_chain_that_cannot_be_extended_fails_alone_and_loses_nothing() {
    let store = Arc::new(MemoryAuditStore::default());
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Sync, None);
    tokio::spawn(writer.run());
    let (victim, other) = (TenantId::new(), TenantId::new());
    store.planted.lock().expect("planted").insert(Some(victim));
    let (a, b) = tokio::join!(
        log.record(vec![event(victim)]),
        log.record(vec![event(other)])
    );
    assert!(matches!(a, Err(AuditError::Unavailable(_))), "{a:?}");
    b.expect("the other tenant's event commits");
    for _ in 0..20 {
        log.record(vec![event(other)]).await.expect("other");
    }
    assert_eq!(store.events(Some(other)).len(), 21);
    assert!(store.events(Some(victim)).is_empty());
    let stats = log.stats().expect("on");
    assert!(stats.chain_conflicts >= 1, "{stats:?}");
    assert_eq!(stats.events_held, 1);
    // Repaired: the held event is written, before the next one.
    store.planted.lock().expect("planted").clear();
    log.record(vec![event(victim)]).await.expect("repaired");
    let written = store.events(Some(victim));
    assert_eq!(written.len(), 2, "nothing acknowledged or held was lost");
    assert_eq!(log.stats().expect("on").events_held, 0);
}

/// A flood of identical refusals costs one event now and one
/// aggregate when its window closes.
#[tokio::test(start_paused = true)]
async fn a_flood_of_refusals_is_folded() {
    let store = Arc::new(MemoryAuditStore::default());
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Sync, None);
    tokio::spawn(writer.run());
    let refusal = || {
        AuditEvent::denied(
            None,
            AuditAction::TokenRead,
            Actor::Anonymous,
            vec![],
            "the API key is unknown or has been revoked",
        )
    };
    for _ in 0..500 {
        log.record(vec![refusal()])
            .await
            .expect("recorded or folded");
    }
    assert_eq!(store.events(None).len(), 1, "the first at once");
    tokio::time::sleep(DENIAL_WINDOW + Duration::from_secs(1)).await;
    log.flush().await;
    let events = store.events(None);
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].event.count, Some(499));
    assert_eq!(log.stats().expect("on").denials_folded, 499);
}

fn quick_store() -> Arc<MemoryAuditStore> {
    let store = Arc::new(MemoryAuditStore::default());
    store.quick.store(true, Ordering::SeqCst);
    store
}

/// Under a steady stream of events a commit is held open until it carries many of them,
/// instead of one commit per wake-up (virtual time: the figures are exact, not timed).
#[tokio::test(start_paused = true)]
async fn under_load_a_commit_is_held_open_until_it_fills() {
    let store = quick_store();
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Async, None);
    tokio::spawn(writer.run());
    let tenant = TenantId::new();
    // 10 events a millisecond (the timer's resolution), each submitted on its own.
    for _ in 0..400 {
        for _ in 0..10 {
            log.record(vec![event(tenant)]).await.expect("queued");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    log.flush().await;
    let stats = log.stats().expect("on");
    assert_eq!(stats.events_committed, 4000);
    let per_commit = stats.events_committed / stats.batches_committed;
    assert!(
        per_commit >= 16,
        "{per_commit} events per commit: {stats:?}"
    );
    assert!(
        stats.windows_held > 0 && stats.window_micros > 0,
        "{stats:?}"
    );
    let report = tessera_audit::verify(store.as_ref(), Some(tenant))
        .await
        .expect("verify");
    assert!(report.ok() && report.events_checked == 4000, "{report:?}");
}

/// A caller waiting on a commit is never held in a window: a lone sync caller commits
/// at once, every time.
#[tokio::test(start_paused = true)]
async fn a_waiting_callers_commit_is_never_held() {
    let store = quick_store();
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Sync, None);
    tokio::spawn(writer.run());
    let tenant = TenantId::new();
    for _ in 0..200 {
        log.record(vec![event(tenant)]).await.expect("committed");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let stats = log.stats().expect("on");
    assert_eq!(stats.batches_committed, 200, "one commit a request");
    assert_eq!(
        (stats.windows_held, stats.window_micros),
        (0, 0),
        "{stats:?}"
    );
}

/// Async events that come in pairs 3 ms apart: the rate promises more within the 2 ms
/// window, but each window gains nothing; after one that gained nothing, windows are skipped,
/// for longer each time.
#[tokio::test(start_paused = true)]
async fn a_window_that_gains_nothing_is_not_held_again_soon() {
    let store = quick_store();
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Async, None);
    tokio::spawn(writer.run());
    let tenant = TenantId::new();
    for _ in 0..100 {
        log.record(vec![event(tenant), event(tenant)])
            .await
            .expect("queued");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    log.flush().await;
    let stats = log.stats().expect("on");
    assert_eq!(stats.events_committed, 200);
    assert!((1..=12).contains(&stats.windows_held), "{stats:?}");
}

/// In sync mode, requests submit their event before forwarding and wait only after: a commit
/// gathers the events of every request still forwarding, and is sent as soon as one of them
/// waits (virtual time: the figures are exact, not timed).
#[tokio::test(start_paused = true)]
async fn a_sync_commit_gathers_requests_in_flight_until_one_waits() {
    let store = quick_store();
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Sync, None);
    tokio::spawn(writer.run());
    let tenant = TenantId::new();
    // 20 requests a millisecond (the timer's resolution), each forwarding for 5 ms between
    // submitting its event and waiting for its commit.
    let mut tasks = Vec::new();
    for _ in 0..20 {
        for i in 0..20u64 {
            let log = log.clone();
            tasks.push(tokio::spawn(async move {
                let pending = log.submit(vec![event(tenant)]).await.expect("submitted");
                tokio::time::sleep(Duration::from_millis(5)).await;
                pending.committed().await.map(|()| i)
            }));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for task in tasks {
        task.await.expect("task").expect("committed");
    }
    let stats = log.stats().expect("on");
    assert_eq!(stats.events_committed, 400);
    let per_commit = stats.events_committed / stats.batches_committed;
    // Without holding, each commit would carry what arrived during the previous one (a
    // commit takes no time here: one millisecond's 20); held until the longest window ends
    // (nobody waits before), it carries two or three milliseconds' worth.
    assert!(
        per_commit >= 35,
        "{per_commit} events per commit: {stats:?}"
    );
    let report = tessera_audit::verify(store.as_ref(), Some(tenant))
        .await
        .expect("verify");
    assert!(report.ok() && report.events_checked == 400, "{report:?}");
}

/// A lane that is far ahead of the writer makes its recorders wait (backpressure), and
/// nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_lane_waits_for_the_writer_and_loses_nothing() {
    let store = quick_store();
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Async, None);
    let tenant = TenantId::new();
    let total = LANE_LIMIT + 500;
    let writer = tokio::spawn(async move {
        // The writer starts late: the lane fills up first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        writer.run().await;
    });
    let submitted = tokio::spawn({
        let log = log.clone();
        async move {
            for _ in 0..total {
                log.record(vec![event(tenant)]).await.expect("queued");
            }
        }
    });
    submitted.await.expect("submitter");
    log.flush().await;
    assert_eq!(store.events(Some(tenant)).len(), total);
    drop(log);
    writer
        .await
        .expect("the writer ends once every recorder is gone");
}
