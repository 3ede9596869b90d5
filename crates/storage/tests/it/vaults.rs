//! Vaults over a test database, for the tests that go through the domain's use-cases.

use std::sync::Arc;

use tessera_domain::{Principal, Vault};
use tessera_storage::DetachedStore;
use tessera_testkit::db::TestDatabase;

/// A vault over `t` with the shared test master key.
pub(crate) fn vault(t: &TestDatabase) -> Vault {
    Vault::new(
        Arc::new(DetachedStore::new(t.db.clone())),
        tessera_testkit::master_key(),
    )
}

/// The admin of a new tenant `name`.
pub(crate) async fn admin(vault: &Vault, name: &str) -> Principal {
    let tenant = vault.create_tenant(name).await.expect("tenant");
    vault
        .authenticate(Some(tenant.api_key.expose()))
        .await
        .expect("admin")
}
