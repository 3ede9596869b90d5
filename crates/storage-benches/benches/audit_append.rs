//! The audit trail's write path: 1,000 gateway events (`token.detokenized`, two tokens, a
//! proxy and a request id), encoded as the serving threads encode them, appended to one
//! tenant's chain through the writer's own appender (`AuditStore::audit_appender`), as the
//! `AuditWriter` appends them — one `append` per committed batch — for the batch sizes the
//! writer forms: 1 (one request at a time), 32 (a busy serving turn) and 1,000 (a backlog).
//! Reported per 1,000 events (`Throughput::Elements`), so criterion also shows the per-event
//! rate. On SQLite, and on PostgreSQL when `TESSERA_TEST_DATABASE_URL` is set.
//!
//! `cargo bench -p tessera-storage --bench audit_append`

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use tessera_audit::{AuditAppender, AuditStore, ChainEvents, EncodedEvents};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent},
    ApplicationId, ProxyId, TenantId,
};
use tessera_storage::DetachedStore;
use tessera_testkit::db::{bench_each_backend, storage_runtime, TestDatabase};
use uuid::Uuid;

/// Events appended per measured iteration.
const EVENTS: usize = 1000;
/// Events per `append` (per committed batch).
const BATCH_SIZES: [usize; 3] = [1, 32, 1000];

/// A store opened on the storage runtime `rt` (which then owns its detached tasks, as in the
/// binaries), and a chain to append to. A chain is keyed by its tenant id alone (no foreign
/// key, before or after blocks), so the tenant needs no row of its own.
struct Fixture {
    _db: TestDatabase,
    store: DetachedStore,
    tenant: TenantId,
}

impl Fixture {
    fn new(rt: &tokio::runtime::Runtime, db: TestDatabase) -> Self {
        let store = rt.block_on(async { DetachedStore::new(db.db.clone()) });
        Self {
            _db: db,
            store,
            tenant: TenantId::new(),
        }
    }
}

/// `EVENTS` events of one proxy invocation each, as the gateway records them.
fn gateway_events(tenant: TenantId) -> Vec<AuditEvent> {
    let actor = Actor::Application(ApplicationId::new());
    let proxy = ProxyId::new();
    (0..EVENTS)
        .map(|i| {
            AuditEvent::success(
                tenant,
                AuditAction::TokenDetokenized,
                actor,
                vec![Uuid::new_v4().into(), Uuid::new_v4().into()],
            )
            .with_proxy(proxy)
            .with_request_id(&format!("bench-{i:08}"))
        })
        .collect()
}

/// Appends `events` in calls of `batch`, each of which must write its chain.
async fn append(appender: &mut dyn AuditAppender, events: &EncodedEvents, batch: usize) {
    let all: Vec<_> = events.iter().collect();
    for chunk in all.chunks(batch) {
        let chains = [ChainEvents {
            chain: chunk[0].chain,
            events: chunk.to_vec(),
        }];
        for chain in appender.append(&chains).await.expect("append") {
            chain.result.expect("the chain is written");
        }
    }
}

fn bench_backend(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, f: &Fixture) {
    // The writer's appender: its own connection, the chain's head known after the first batch.
    let mut appender = rt.block_on(f.store.audit_appender()).expect("appender");
    let mut group = c.benchmark_group(format!("{name}: append {EVENTS} audit events"));
    group.throughput(Throughput::Elements(EVENTS as u64));
    // One iteration is up to a thousand commits: the same few iterations per sample.
    group.sampling_mode(SamplingMode::Flat);
    for batch in BATCH_SIZES {
        group.bench_with_input(
            BenchmarkId::new("batches of", batch),
            &batch,
            |b, &batch| {
                b.iter_batched(
                    || EncodedEvents::of(&gateway_events(f.tenant)),
                    |events| rt.block_on(append(appender.as_mut(), &events, batch)),
                    BatchSize::PerIteration,
                )
            },
        );
    }
    group.finish();
}

fn audit_append(c: &mut Criterion) {
    let storage = storage_runtime();
    bench_each_backend(&storage, |name, db| {
        bench_backend(c, &storage, name, &Fixture::new(&storage, db));
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = audit_append
}
criterion_main!(benches);
