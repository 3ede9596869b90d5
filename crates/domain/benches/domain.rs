//! Micro-benchmarks of the hot domain paths: token encryption round trip and permission
//! evaluation. Run with `cargo bench -p tessera-domain` (or `just bench`).

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tessera_domain::{
    application::{Application, ApplicationType},
    timestamp, ApplicationId, Container, MasterKey, Permission, Principal, Rule, TenantId, TokenId,
};

fn crypto(c: &mut Criterion) {
    let master = MasterKey::generate();
    let tenant = TenantId::new();
    let key = master
        .unwrap_data_key(tenant, &master.new_wrapped_data_key(tenant).expect("wrap"))
        .expect("unwrap");
    let token = TokenId::new();
    let plaintext = br#"{"number":"4242424242424242","expiration_month":12,"expiration_year":2030,"cvc":"123"}"#;
    c.bench_function("token seal+open (card, 85 B)", |b| {
        b.iter(|| {
            let ct = key
                .seal_token(tenant, &token, b"", black_box(plaintext))
                .expect("seal");
            key.open_token(tenant, &token, b"", black_box(&ct))
                .expect("open")
        })
    });
}

fn permissions(c: &mut Criterion) {
    let id = ApplicationId::new();
    let now = timestamp::now();
    let rules = (1..=10)
        .map(|i| Rule {
            description: None,
            priority: i,
            container: Container::parse(&format!("/team{i}/")).expect("container"),
            permissions: vec![Permission::TokenRead, Permission::TokenUse],
            transform: Default::default(),
        })
        .collect();
    let principal = Principal::new(&Application {
        permissions: vec![Permission::TokenCreate],
        rules,
        ..Application::new(
            id,
            TenantId::new(),
            "bench",
            ApplicationType::Private,
            (id, now),
        )
    });
    let last = Container::parse("/team10/pci/high/").expect("container");
    let miss = Container::parse("/general/high/").expect("container");
    c.bench_function("permission check, 10 rules, last rule matches", |b| {
        b.iter(|| principal.may_on(black_box(Permission::TokenUse), black_box(&last)))
    });
    c.bench_function("permission check, 10 rules, fallback", |b| {
        b.iter(|| principal.may_on(black_box(Permission::TokenCreate), black_box(&miss)))
    });
}

criterion_group!(benches, crypto, permissions);
criterion_main!(benches);
