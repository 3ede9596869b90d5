//! Deleting a tenant, on both backends (docs/operations.md, "Deleting a tenant"): its data key
//! is destroyed first, and from then on the database's files no longer hold it, so a copy
//! taken between the two steps opens none of its tokens, with the master key or without; its
//! rows go next, and another tenant's stay readable; both steps are in the deployment's chain;
//! a start-up between the steps is not stopped by the half-deleted tenant.

use std::sync::Arc;

use serde_json::json;
use tessera_domain::{
    audit::{AuditAction, Durability},
    store::{DataKeyStore, TenantStore},
    MasterKey, TenantId, Vault, VaultError,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    vault::{plain_token, tenant_admin},
};

backend_tests!(
    a_copy_taken_after_the_keys_are_destroyed_opens_none_of_the_tenants_tokens,
    rows_are_deleted_only_after_the_keys
);

fn vault(t: &TestDatabase) -> Vault {
    Vault::with_master_keys(
        Arc::new(DetachedStore::new(t.db.clone())),
        tessera_testkit::master_key(),
        Vec::<MasterKey>::new(),
    )
}

/// A vault recording its events in the database's trail (committed before each call returns).
fn recording_vault(t: &TestDatabase) -> Vault {
    let store = Arc::new(DetachedStore::new(t.db.clone()));
    let (log, writer) = tessera_audit::start(store, Durability::Sync, None);
    writer.spawn().expect("audit writer");
    vault(t).with_audit(log)
}

async fn a_copy_taken_after_the_keys_are_destroyed_opens_none_of_the_tenants_tokens(
    t: &TestDatabase,
) {
    let v = recording_vault(t);
    let (gone, kept) = (
        tenant_admin(&v, "gone").await,
        tenant_admin(&v, "kept").await,
    );
    let gone_token = plain_token(&v, &gone, json!({"secret": "gone-secret"})).await;
    let kept_token = plain_token(&v, &kept, json!({"secret": "kept-secret"})).await;
    let tenant = gone.tenant_id();
    // A second data-key version too (its job not run): destroyed with the first.
    v.rotate_data_key(tenant).await.expect("rotate");
    let stored =
        t.db.get_tenant(tenant)
            .await
            .expect("read")
            .expect("tenant");
    let mut destroyed = vec![
        stored.wrapped_data_key,
        stored.wrapped_index_keys.expect("index keys"),
    ];
    let versions = t.db.data_key_versions(tenant).await.expect("versions");
    destroyed.extend(versions.into_iter().map(|v| v.wrapped));
    assert_eq!(destroyed.len(), 3);

    assert!(v.destroy_tenant_keys(tenant).await.expect("destroy"));
    // The database's files no longer hold the wrapped keys (SQLite: checkpointed and zeroed;
    // PostgreSQL: the tables rewritten, the old row versions gone).
    let stored = t.stored_bytes().await;
    for wrapped in &destroyed {
        assert!(
            !stored
                .windows(wrapped.len())
                .any(|w| w == wrapped.as_slice()),
            "a destroyed key is still in the database's files"
        );
    }
    // What a copy sees now, through a vault that never held the key: the tenant's tokens do
    // not open; the other tenant's do. So does this process, which forgot its copy.
    let copy = vault(t);
    for reader in [&copy, &v] {
        let refused = reader.get_token(&gone, gone_token.clone()).await;
        assert!(
            matches!(refused, Err(VaultError::NotFound(_))),
            "{refused:?}"
        );
        let read = reader
            .get_token(&kept, kept_token.clone())
            .await
            .expect("the other tenant");
        assert_eq!(read.data.expose(), &json!({"secret": "kept-secret"}));
    }
    // A start between the steps is not stopped by the half-deleted tenant.
    copy.verify_master_key().await.expect("start-up");
    // Running again finds the keys gone and finishes.
    let deleted = v.delete_tenant(tenant).await.expect("delete");
    assert!(!deleted.keys_destroyed_now);
    assert_eq!(
        t.count(&format!("tokens WHERE tenant_id = '{tenant}'"))
            .await,
        0
    );
    assert_eq!(
        t.count(&format!("applications WHERE tenant_id = '{tenant}'"))
            .await,
        0
    );
    assert!(t.db.get_tenant(tenant).await.expect("read").is_none());
    let read = v
        .get_token(&kept, kept_token.clone())
        .await
        .expect("the other tenant");
    assert_eq!(read.data.expose(), &json!({"secret": "kept-secret"}));
    assert!(matches!(
        v.delete_tenant(tenant).await,
        Err(VaultError::NotFound(_))
    ));

    v.audit().flush().await;
    let actions: Vec<AuditAction> = t
        .audit_chain(None)
        .await
        .iter()
        .filter(|e| {
            e.event
                .resource_ids
                .iter()
                .any(|r| r.to_string() == tenant.to_string())
        })
        .map(|e| e.event.action)
        .collect();
    assert_eq!(
        actions,
        [AuditAction::TenantKeysDestroyed, AuditAction::TenantDeleted]
    );
}

async fn rows_are_deleted_only_after_the_keys(t: &TestDatabase) {
    let v = vault(t);
    let admin = tenant_admin(&v, "t").await;
    let tenant: TenantId = admin.tenant_id();
    let refused = v.delete_tenant_rows(tenant).await;
    assert!(
        matches!(refused, Err(VaultError::Conflict(_))),
        "{refused:?}"
    );
    assert!(t.db.get_tenant(tenant).await.expect("read").is_some());
    assert!(matches!(
        v.delete_tenant(TenantId::new()).await,
        Err(VaultError::NotFound(_))
    ));
}
