//! Token reads batched across concurrent requests: on PostgreSQL, reads made in the
//! same turn of a serving thread's event loop share one statement (SQLite reads are not
//! batched: nothing to save in-process); on both backends each read answers exactly what an
//! unbatched read of its own tenant and ids answers — another tenant's token and a missing one
//! are absent, duplicates count once, no read ever receives another's rows, and a row that
//! cannot be understood fails only the reads that want it, not another tenant's in its batch.

use std::{collections::BTreeSet, sync::Arc};

use serde_json::json;
use tessera_domain::{store::TokenRecords, Principal, TenantId, TokenId, Vault};
use tessera_storage::{Backend, DetachedStore};
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    vault::{plain_token, tenant_admin},
};

backend_tests!(
    concurrent_reads_share_a_batch_and_each_gets_only_its_own_rows,
    reads_after_a_batch_open_the_next_one,
    a_corrupt_row_fails_only_the_reads_that_want_it,
);

/// A tenant with `n` tokens, written through `vault`.
async fn tenant_with_tokens(vault: &Vault, name: &str, n: usize) -> (TenantId, Vec<TokenId>) {
    let admin: Principal = tenant_admin(vault, name).await;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(plain_token(vault, &admin, json!(format!("secret-{name}-{i}"))).await);
    }
    (admin.tenant_id(), ids)
}

fn ids_of(rows: &[tessera_domain::store::StoredToken]) -> BTreeSet<TokenId> {
    rows.iter().map(|r| r.id.clone()).collect()
}

/// Sixteen concurrent reads — own tokens, another tenant's, a missing id, duplicates — on one
/// thread: one batch answers them, and each gets what the unbatched read gets.
async fn concurrent_reads_share_a_batch_and_each_gets_only_its_own_rows(t: &TestDatabase) {
    let store = Arc::new(DetachedStore::new(t.db.clone()));
    let vault = Vault::new(store.clone(), tessera_testkit::master_key());
    let (acme, acme_ids) = tenant_with_tokens(&vault, "acme", 4).await;
    let (globex, globex_ids) = tenant_with_tokens(&vault, "globex", 2).await;
    let missing = TokenId::new();
    let reads: Vec<(TenantId, Vec<TokenId>)> = (0..16)
        .map(|i| match i % 4 {
            0 => (
                acme,
                vec![acme_ids[i % 4].clone(), acme_ids[(i + 1) % 4].clone()],
            ),
            1 => (acme, vec![acme_ids[1].clone(), globex_ids[0].clone()]),
            2 => (
                globex,
                vec![
                    globex_ids[1].clone(),
                    missing.clone(),
                    globex_ids[1].clone(),
                ],
            ),
            _ => (globex, vec![acme_ids[2].clone(), acme_ids[3].clone()]),
        })
        .collect();
    let before = store.token_read_batches();
    let batched = futures_util::future::join_all(
        reads
            .iter()
            .map(|(tenant, ids)| store.get_tokens(*tenant, ids)),
    )
    .await;
    let after = store.token_read_batches();
    let batched_here = match t.db.backend() {
        Backend::Postgres => (16, 1),
        Backend::Sqlite => (0, 0),
    };
    assert_eq!(
        (after.reads - before.reads, after.batches - before.batches),
        batched_here,
        "on PostgreSQL the reads of one turn share one batch"
    );
    for ((tenant, ids), batched) in reads.iter().zip(batched) {
        let batched = batched.expect("batched read");
        let unbatched = t.db.get_tokens(*tenant, ids).await.expect("unbatched read");
        assert_eq!(ids_of(&batched), ids_of(&unbatched), "{tenant} {ids:?}");
        assert_eq!(batched.len(), unbatched.len(), "each row once");
        assert!(batched.iter().all(|row| row.tenant_id == *tenant));
        for (b, u) in batched.iter().zip(&unbatched) {
            assert_eq!(b.ciphertext, u.ciphertext);
        }
    }
    // Another tenant's tokens are absent, as unbatched.
    let cross = store
        .get_tokens(globex, &[acme_ids[2].clone(), acme_ids[3].clone()])
        .await
        .expect("read");
    assert!(cross.is_empty());
}

/// A read made after a batch was taken is answered by a new batch, not lost.
async fn reads_after_a_batch_open_the_next_one(t: &TestDatabase) {
    let store = Arc::new(DetachedStore::new(t.db.clone()));
    let vault = Vault::new(store.clone(), tessera_testkit::master_key());
    let (acme, ids) = tenant_with_tokens(&vault, "acme", 2).await;
    let before = store.token_read_batches();
    for id in &ids {
        let rows = store
            .get_tokens(acme, std::slice::from_ref(id))
            .await
            .expect("read");
        assert_eq!(ids_of(&rows), BTreeSet::from([id.clone()]));
    }
    assert!(store.get_tokens(acme, &[]).await.expect("empty").is_empty());
    let after = store.token_read_batches();
    let expected = match t.db.backend() {
        Backend::Postgres => (2, 2),
        Backend::Sqlite => (0, 0),
    };
    assert_eq!(
        (after.reads - before.reads, after.batches - before.batches),
        expected
    );
}

/// A row planted with an unknown token type (write access to the database) fails the read
/// that wants it; another tenant's read in the same batch is answered as usual.
async fn a_corrupt_row_fails_only_the_reads_that_want_it(t: &TestDatabase) {
    let store = Arc::new(DetachedStore::new(t.db.clone()));
    let vault = Vault::new(store.clone(), tessera_testkit::master_key());
    let (acme, acme_ids) = tenant_with_tokens(&vault, "acme", 2).await;
    let (globex, globex_ids) = tenant_with_tokens(&vault, "globex", 1).await;
    t.execute(&format!(
        "UPDATE tokens SET token_type = 'bogus' WHERE id = '{}'",
        acme_ids[0]
    ))
    .await;
    let (broken, healthy, fine) = tokio::join!(
        store.get_tokens(acme, &acme_ids),
        store.get_tokens(acme, &acme_ids[1..]),
        store.get_tokens(globex, &globex_ids),
    );
    let error = broken.expect_err("the corrupt row fails its read");
    assert!(!error.to_string().contains("secret"), "{error}");
    assert_eq!(
        ids_of(&healthy.expect("read")),
        BTreeSet::from([acme_ids[1].clone()])
    );
    assert_eq!(
        ids_of(&fine.expect("read")),
        BTreeSet::from([globex_ids[0].clone()])
    );
}
