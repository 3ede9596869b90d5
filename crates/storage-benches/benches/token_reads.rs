//! The storage read of a cold proxy request: two tokens fetched by id (drawn from a pool of
//! 400), through `DetachedStore` as the binaries wire it, called from a single-threaded runtime
//! as a serving thread would — on SQLite, and on PostgreSQL when `TESSERA_TEST_DATABASE_URL` is
//! set. Also the two credential point reads a request makes when its keys are not cached.
//!
//! `cargo bench -p tessera-storage --bench token_reads`

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::{hint::black_box, sync::Arc};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use tessera_domain::{
    store::{ApplicationStore, TokenRecords},
    ApiKey, MasterKey, TenantId, TokenId, Vault,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{
    db::{bench_each_backend_detached, TestDatabase},
    vault::plain_token,
};

const POOL: usize = 400;

struct Fixture {
    _db: TestDatabase,
    store: DetachedStore,
    tenant: TenantId,
    ids: Vec<TokenId>,
    key: ApiKey,
}

/// A tenant with `POOL` tokens, created on the storage runtime `rt` (which then owns the
/// store's detached tasks, as in the binaries).
fn fixture(rt: &tokio::runtime::Runtime, db: TestDatabase) -> Fixture {
    rt.block_on(async move {
        let store = DetachedStore::new(db.db.clone());
        let vault = Vault::new(Arc::new(store.clone()), MasterKey::generate());
        let tenant = vault.create_tenant("bench").await.expect("tenant");
        let admin = vault
            .authenticate(Some(tenant.api_key.expose()))
            .await
            .expect("admin");
        let mut ids = Vec::with_capacity(POOL);
        for i in 0..POOL {
            ids.push(plain_token(&vault, &admin, json!(format!("4242424242424{i:03}"))).await);
        }
        let key = ApiKey::parse(tenant.api_key.expose()).expect("key");
        Fixture {
            _db: db,
            store,
            tenant: admin.tenant_id(),
            ids,
            key,
        }
    })
}

fn bench_backend(c: &mut Criterion, name: &str, f: &Fixture) {
    // A serving thread: a current-thread runtime, like each of proxy-gateway's cores.
    let serving = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("serving runtime");
    let got = serving
        .block_on(f.store.get_tokens(f.tenant, &f.ids[..2]))
        .expect("read");
    assert_eq!(got.len(), 2, "both tokens are found");
    let mut next = 0usize;
    c.bench_function(&format!("{name}: get_tokens 2 of {POOL} by id"), |b| {
        b.iter(|| {
            // Two ids that differ from call to call, as cold traffic's do.
            next = (next + 7) % (POOL - 1);
            let ids = [f.ids[next].clone(), f.ids[next + 1].clone()];
            let rows = serving
                .block_on(f.store.get_tokens(f.tenant, black_box(&ids)))
                .expect("read");
            assert_eq!(rows.len(), 2);
            rows
        })
    });
    // 16 concurrent requests of 2 tokens each, as one turn of a busy serving thread: through
    // the store's read batches (one statement) and through the database directly (each
    // request its own reads).
    let requests = |start: usize| -> Vec<[TokenId; 2]> {
        (0..16)
            .map(|i| {
                let at = (start + i * 13) % (POOL - 1);
                [f.ids[at].clone(), f.ids[at + 1].clone()]
            })
            .collect()
    };
    for (label, batched) in [("batched", true), ("unbatched", false)] {
        let mut start = 0usize;
        c.bench_function(
            &format!("{name}: 16 concurrent requests x get_tokens 2, {label}"),
            |b| {
                b.iter(|| {
                    start = (start + 29) % POOL;
                    let wanted = requests(start);
                    let reads = wanted.iter().map(|ids| async move {
                        if batched {
                            f.store.get_tokens(f.tenant, ids).await
                        } else {
                            f.store.database().get_tokens(f.tenant, ids).await
                        }
                    });
                    let answers = serving.block_on(futures_util::future::join_all(reads));
                    for rows in &answers {
                        assert_eq!(rows.as_ref().expect("read").len(), 2);
                    }
                    answers
                })
            },
        );
    }
    let hash = f.key.hash();
    c.bench_function(&format!("{name}: find_application_by_key_hash"), |b| {
        b.iter(|| {
            serving
                .block_on(f.store.find_application_by_key_hash(black_box(&hash)))
                .expect("read")
                .expect("found")
        })
    });
}

fn token_reads(c: &mut Criterion) {
    bench_each_backend_detached(fixture, |name, f| bench_backend(c, name, f));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = token_reads
}
criterion_main!(benches);
