//! The use-cases the web console added to the domain, on both backends: a token's parents
//! (the reverse of its children, confined to what the caller may read and to its tenant) and
//! the verification of one's own tenant's audit chain (needs `audit:read`).

use std::sync::Arc;

use serde_json::json;
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent, Durability},
    error::Resource,
    ApplicationInput, NewToken, Principal, TokenId, TokenType, Vault, VaultError,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::vaults::{admin, vault};

backend_tests!(
    parents_are_listed_in_link_order_within_what_the_caller_reads,
    own_audit_verification_needs_audit_read_and_walks_one_chain,
);

async fn token(vault: &Vault, caller: &Principal, container: &str) -> TokenId {
    let mut input = NewToken::new(TokenType::Token, json!("v"));
    input.containers = Some(vec![container.to_string()]);
    vault.create_token(caller, input).await.expect("token").id
}

async fn key_with(vault: &Vault, admin: &Principal, spec: serde_json::Value) -> Principal {
    let input: ApplicationInput = serde_json::from_value(spec).expect("input");
    let issued = vault
        .create_application(admin, input)
        .await
        .expect("application");
    vault
        .authenticate(Some(issued.api_key.expose()))
        .await
        .expect("principal")
}

/// Three parents of one child, one of them in a container a narrow key may not read: the
/// admin sees all three in link order, the narrow key two; another tenant's admin gets a 404
/// for the child; a token without parents has an empty page.
async fn parents_are_listed_in_link_order_within_what_the_caller_reads(t: &TestDatabase) {
    let vault = vault(t);
    let admin = admin(&vault, "acme").await;
    let child = token(&vault, &admin, "/open/").await;
    let mut parents = Vec::new();
    for container in ["/open/", "/secret/", "/open/b/"] {
        let parent = token(&vault, &admin, container).await;
        vault
            .associate(&admin, parent.clone(), child.clone())
            .await
            .expect("link");
        parents.push(parent);
    }
    let all = vault
        .list_parents(&admin, child.clone(), Default::default())
        .await
        .expect("parents");
    assert_eq!(all.total_items, 3);
    let mut ids: Vec<TokenId> = all.items.iter().map(|p| p.id.clone()).collect();
    ids.sort_by_key(|id| parents.iter().position(|p| p == id));
    assert_eq!(ids, parents);

    let narrow = key_with(
        &vault,
        &admin,
        json!({"name": "n", "type": "private", "permissions": [],
               "rules": [{"priority": 1, "container": "/open/", "permissions": ["token:read"]}]}),
    )
    .await;
    let seen = vault
        .list_parents(&narrow, child.clone(), Default::default())
        .await
        .expect("parents");
    assert_eq!(
        seen.total_items, 2,
        "the /secret/ parent is neither listed nor counted"
    );
    assert!(seen.items.iter().all(|p| p.id != parents[1]));

    let other = admin_of_other_tenant(&vault).await;
    assert!(matches!(
        vault.list_parents(&other, child, Default::default()).await,
        Err(VaultError::NotFound(Resource::Token))
    ));
    let orphan = vault
        .list_parents(&admin, parents[0].clone(), Default::default())
        .await
        .expect("parents");
    assert_eq!((orphan.total_items, orphan.items.len()), (0, 0));
}

async fn admin_of_other_tenant(vault: &Vault) -> Principal {
    admin(vault, "globex").await
}

/// `verify_own_audit` refuses a key without `audit:read` and walks only the caller's chain.
async fn own_audit_verification_needs_audit_read_and_walks_one_chain(t: &TestDatabase) {
    let store = Arc::new(DetachedStore::new(t.db.clone()));
    let (log, writer) = tessera_audit::start(store, Durability::Sync, None);
    let vault = vault(t).with_audit(log);
    writer.spawn().expect("audit writer");
    let acme = admin(&vault, "acme").await;
    let globex = admin(&vault, "globex").await;
    for caller in [&acme, &globex, &acme] {
        let event = AuditEvent::success(
            caller.tenant_id(),
            AuditAction::TokenRead,
            Actor::from(caller),
            vec![uuid::Uuid::new_v4().into()],
        );
        vault.audit().record(vec![event]).await.expect("recorded");
    }
    let report = vault.verify_own_audit(&acme).await.expect("verify");
    assert!(report.ok());
    assert_eq!(report.chains.len(), 1);
    assert_eq!(report.chains[0].tenant_id, Some(acme.tenant_id()));
    assert_eq!(report.events_checked, 2);

    let reader = key_with(
        &vault,
        &acme,
        json!({"name": "r", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    assert!(matches!(
        vault.verify_own_audit(&reader).await,
        Err(VaultError::Forbidden { .. })
    ));
}
