//! Listing page 1 (size 50) of a parent with 10,000 children, filtered by type — on SQLite,
//! and on PostgreSQL when `TESSERA_TEST_DATABASE_URL` is set. Measures the store call alone and
//! the whole use-case (permission checks and decryption of the 50 tokens included).
//!
//! `cargo bench -p tessera-storage --bench children`

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::{hint::black_box, sync::Arc};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use tessera_domain::{
    store::{ContainerScope, TokenFilter, TokenListing},
    MasterKey, NewToken, PageRequest, Principal, TokenId, TokenType, Vault,
};
use tessera_testkit::{
    db::{bench_each_backend, TestDatabase},
    vault::{plain_token, tenant_admin},
};

const CHILDREN: usize = 10_000;

struct Fixture {
    _db: TestDatabase,
    store: tessera_storage::Database,
    vault: Vault,
    admin: Principal,
    parent: TokenId,
}

async fn fixture(db: TestDatabase) -> Fixture {
    let store = db.db.clone();
    let vault = Vault::new(Arc::new(store.clone()), MasterKey::generate());
    let admin = tenant_admin(&vault, "bench").await;
    let token = NewToken::new;
    let parent = plain_token(&vault, &admin, json!("parent")).await;
    for i in 0..CHILDREN {
        let child = if i % 2 == 0 {
            token(TokenType::Card, json!({"number": "4242424242424242"}))
        } else {
            token(TokenType::Token, json!(i))
        };
        vault
            .create_child_token(&admin, parent.clone(), child)
            .await
            .expect("child");
    }
    Fixture {
        _db: db,
        store,
        vault,
        admin,
        parent,
    }
}

fn bench_backend(c: &mut Criterion, name: &str, rt: &tokio::runtime::Runtime, f: &Fixture) {
    let filter = TokenFilter {
        parent: Some(f.parent.clone()),
        types: vec![TokenType::Card],
        ..Default::default()
    };
    let page = PageRequest::new(Some(1), Some(50)).expect("page");
    let got = rt
        .block_on(
            f.store
                .list_tokens(f.admin.tenant_id(), &filter, &ContainerScope::All, page),
        )
        .expect("list");
    assert_eq!(
        (got.items.len(), got.total_items),
        (50, (CHILDREN / 2) as u64)
    );
    c.bench_function(
        &format!("{name}: store list children p1 size 50 type=card of 10k"),
        |b| {
            b.iter(|| {
                rt.block_on(f.store.list_tokens(
                    f.admin.tenant_id(),
                    black_box(&filter),
                    &ContainerScope::All,
                    page,
                ))
                .expect("list")
            })
        },
    );
    let only_type = TokenFilter {
        types: vec![TokenType::Card],
        ..Default::default()
    };
    c.bench_function(
        &format!("{name}: Vault::list_children (incl. decrypt) p1 size 50 type=card of 10k"),
        |b| {
            b.iter(|| {
                rt.block_on(f.vault.list_children(
                    &f.admin,
                    f.parent.clone(),
                    black_box(&only_type),
                    page,
                ))
                .expect("list")
            })
        },
    );
}

fn children(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    bench_each_backend(&rt, |name, db| {
        let fixture = rt.block_on(fixture(db));
        bench_backend(c, name, &rt, &fixture);
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = children
}
criterion_main!(benches);
