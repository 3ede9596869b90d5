//! The point-read path: reads that a cold proxy request makes run on the calling thread
//! (SQLite connections run in-process; PostgreSQL connections owned by the calling thread),
//! see every committed write at once, and keep working when the thread that opened a
//! connection is gone.

use std::sync::Arc;

use serde_json::json;
use tessera_domain::{
    store::{StoreError, TokenRecords},
    MasterKey, Principal, Vault,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    vault::{plain_token, tenant_admin},
};

backend_tests!(
    point_reads_do_not_need_the_storage_runtime,
    point_reads_see_writes_at_once,
    point_reads_outlive_the_threads_that_opened_connections,
);

/// A tenant with one token, written through `vault`; returns the admin principal.
async fn tenant_with_token(vault: &Vault) -> (Principal, tessera_domain::TokenId) {
    let admin = tenant_admin(vault, "acme").await;
    let token = plain_token(vault, &admin, json!("4242424242424242")).await;
    (admin, token)
}

/// With the runtime that owns the store's detached tasks shut down, point reads still answer
/// (they run on the caller's thread) while a write cannot (it is spawned on that runtime).
async fn point_reads_do_not_need_the_storage_runtime(t: &TestDatabase) {
    let db = t.db.clone();
    // On a blocking-pool thread, not a joined std thread: this test's runtime must keep
    // running, since it drives the I/O of the PostgreSQL connections it opened.
    let (store, admin, id) = tokio::task::spawn_blocking(move || {
        let storage = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("storage runtime");
        let (store, admin, id) = storage.block_on(async move {
            let store = DetachedStore::new(db);
            let vault = Vault::new(Arc::new(store.clone()), MasterKey::generate());
            let (admin, id) = tenant_with_token(&vault).await;
            (store, admin, id)
        });
        drop(storage);
        (store, admin, id)
    })
    .await
    .expect("storage thread");

    let rows = store
        .get_tokens(admin.tenant_id(), std::slice::from_ref(&id))
        .await
        .expect("a point read needs no storage runtime");
    assert_eq!(rows.len(), 1);
    assert!(store
        .get_token(admin.tenant_id(), id.clone())
        .await
        .expect("point read")
        .is_some());
    let write = store.delete_token(admin.tenant_id(), id).await;
    assert!(
        matches!(write, Err(StoreError::Backend(_))),
        "writes still go to the storage runtime: {write:?}"
    );
}

/// A write committed through the write pool is visible to the very next point read, and a
/// deleted token is gone from it at once.
async fn point_reads_see_writes_at_once(t: &TestDatabase) {
    let vault = Vault::new(Arc::new(t.db.clone()), MasterKey::generate());
    let (admin, id) = tenant_with_token(&vault).await;
    assert_eq!(
        t.db.get_tokens(admin.tenant_id(), std::slice::from_ref(&id))
            .await
            .expect("read")
            .len(),
        1
    );
    assert!(t
        .db
        .delete_token(admin.tenant_id(), id.clone())
        .await
        .expect("delete"));
    assert!(t
        .db
        .get_tokens(admin.tenant_id(), std::slice::from_ref(&id))
        .await
        .expect("read")
        .is_empty());
    assert!(t
        .db
        .get_token(admin.tenant_id(), id)
        .await
        .expect("read")
        .is_none());
}

/// Threads and runtimes come and go (a runtime restarted, a test's thread ended); a later
/// runtime on a thread may find connections whose I/O task died with an earlier runtime of that
/// thread (or of an ended thread whose slot it reuses). Every read must still succeed.
async fn point_reads_outlive_the_threads_that_opened_connections(t: &TestDatabase) {
    let vault = Vault::new(Arc::new(t.db.clone()), MasterKey::generate());
    let (admin, id) = tenant_with_token(&vault).await;
    for round in 0..6 {
        let db = t.db.clone();
        let tenant = admin.tenant_id();
        let value = id.clone();
        tokio::task::spawn_blocking(move || {
            let serving = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            serving.block_on(async {
                for _ in 0..3 {
                    let rows = db.get_tokens(tenant, std::slice::from_ref(&value)).await;
                    assert_eq!(
                        rows.map(|r| r.len()).map_err(|e| e.to_string()),
                        Ok(1),
                        "round {round}"
                    );
                }
            });
        })
        .await
        .expect("serving thread");
    }
}
