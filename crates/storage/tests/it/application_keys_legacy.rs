//! Applications written before several keys per application: each one's key moves into
//! `application_keys` and keeps working, on both backends.

use std::sync::Arc;

use tessera_domain::{store::ApplicationStore, ApiKey, ApplicationId, MasterKey, TenantId, Vault};
use tessera_testkit::db::{postgres_required, TestDatabase, PG_URL_VAR};

/// The last migration with one key per application.
const BEFORE_KEYS: &str = "2026-11-26-000010";

mod sqlite {
    #[tokio::test]
    async fn a_key_written_before_application_keys_still_authenticates() {
        let db = super::TestDatabase::sqlite_through(Some(super::BEFORE_KEYS)).await;
        super::check_move(db).await;
    }
}

mod postgres {
    #[tokio::test]
    async fn a_key_written_before_application_keys_still_authenticates() {
        match super::TestDatabase::postgres_through(Some(super::BEFORE_KEYS)).await {
            Some(db) => super::check_move(db).await,
            None if super::postgres_required() => {
                panic!("CI=true but {} is unset", super::PG_URL_VAR)
            }
            None => eprintln!("skipped: set {} to run PostgreSQL tests", super::PG_URL_VAR),
        }
    }
}

async fn check_move(db: TestDatabase) {
    let (tenant, app) = (TenantId::new(), ApplicationId::new());
    let key = ApiKey::generate();
    let hex: String = key
        .hash()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let blob = match db.db.backend() {
        tessera_storage::Backend::Sqlite => format!("X'{hex}'"),
        tessera_storage::Backend::Postgres => format!("'\\x{hex}'::bytea"),
    };
    db.execute(&format!(
        "INSERT INTO tenants (tenant_id, name, wrapped_data_key, created_at) \
         VALUES ('{tenant}', 'old', {blob}, '2026-11-20 10:00:00')"
    ))
    .await;
    db.execute(&format!(
        "INSERT INTO applications (tenant_id, id, name, app_type, permissions, rules, key_hash, \
         created_by, created_at, modified_by, modified_at) VALUES ('{tenant}', '{app}', 'old', \
         'management', '[\"application:read\"]', '[]', {blob}, '{app}', '2026-11-20 10:00:00', \
         '{app}', '2026-11-21 10:00:00')"
    ))
    .await;
    db.db.migrate().await.expect("migrate");

    let keys = db
        .db
        .list_application_keys(tenant, &[app])
        .await
        .expect("keys");
    assert_eq!(keys.len(), 1, "the key moved over");
    assert_eq!(keys[0].application_id, app);
    assert_eq!(
        tessera_domain::timestamp::format(keys[0].created_at),
        "2026-11-21T10:00:00.000000+00:00",
        "issued at the application's last change"
    );
    let read = db
        .db
        .get_application(tenant, app)
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(read.expires_at, None, "old applications do not expire");

    let vault = Vault::new(Arc::new(db.db.clone()), MasterKey::generate());
    let caller = vault
        .authenticate(Some(key.expose()))
        .await
        .expect("the old key still works");
    assert_eq!(caller.application_id(), app);
    let listed = vault.application_keys(&caller, app).await.expect("listed");
    assert_eq!(listed, keys);
}
