//! Proxy secrets at rest: keys are found by a keyed lookup hash and kept sealed, as
//! is transform code; proxies written before that are sealed at start-up, leaving no clear copy
//! in the database's files, on both backends.

use std::sync::Arc;

use tessera_domain::{ApiKey, ApplicationId, Permission, ProxyInput, TenantId, Vault};
use tessera_testkit::db::{postgres_required, TestDatabase, PG_URL_VAR};

/// The last migration before proxy secrets were sealed.
const BEFORE_SEALING: &str = "2026-11-21-000003";

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

mod sqlite {
    #[tokio::test]
    async fn legacy_clear_proxies_are_sealed_and_keep_working() {
        let db = super::TestDatabase::sqlite_through(Some(super::BEFORE_SEALING)).await;
        super::check_sealing(db).await;
    }
}

mod postgres {
    #[tokio::test]
    async fn legacy_clear_proxies_are_sealed_and_keep_working() {
        match super::TestDatabase::postgres_through(Some(super::BEFORE_SEALING)).await {
            Some(db) => super::check_sealing(db).await,
            None if super::postgres_required() => {
                panic!("CI=true but {} is unset", super::PG_URL_VAR)
            }
            None => eprintln!("skipped: set {} to run PostgreSQL tests", super::PG_URL_VAR),
        }
    }
}

/// Writes a tenant and its admin as the release of the old schema did (today's code writes
/// today's schema): the tenant's id, the admin's id and key.
async fn legacy_tenant(db: &TestDatabase) -> (TenantId, ApplicationId, ApiKey) {
    let (t, admin, key) = (TenantId::new(), ApplicationId::new(), ApiKey::generate());
    let wrapped = tessera_testkit::master_key()
        .new_wrapped_data_key(t)
        .expect("wrap");
    let blob = |bytes: &[u8]| {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        match db.db.backend() {
            tessera_storage::Backend::Sqlite => format!("X'{hex}'"),
            tessera_storage::Backend::Postgres => format!("'\\x{hex}'::bytea"),
        }
    };
    let permissions = serde_json::to_string(&Permission::ALL).expect("json");
    db.execute(&format!(
        "INSERT INTO tenants (tenant_id, name, wrapped_data_key, created_at) \
         VALUES ('{t}', 'legacy', {}, '2026-11-20 00:00:00')",
        blob(&wrapped)
    ))
    .await;
    db.execute(&format!(
        "INSERT INTO applications (tenant_id, id, name, app_type, permissions, rules, key_hash, \
         created_by, created_at, modified_by, modified_at) VALUES ('{t}', '{admin}', 'admin', \
         'management', '{permissions}', '[]', {}, '{admin}', '2026-11-20 00:00:00', '{admin}', \
         '2026-11-20 00:00:00')",
        blob(key.hash().as_bytes())
    ))
    .await;
    (t, admin, key)
}

async fn check_sealing(db: TestDatabase) {
    let vault = Vault::new(Arc::new(db.db.clone()), tessera_testkit::master_key());
    let (t, admin, api_key) = legacy_tenant(&db).await;
    let key = "LegacyClearProxyKey0123456789abc";
    let code = "module.exports = async (req) => ({ body: \"LEGACY_CODE_MARKER\" });";
    db.execute(&format!(
        "INSERT INTO proxies (tenant_id, id, name, name_search, proxy_key, destination_url, \
         request_transform, require_auth, created_by, created_at, modified_by, modified_at) \
         VALUES ('{t}', '6f9619ff-8b86-4011-b42d-00c04fc964ff', 'old', 'old', '{key}', \
         'https://api.example.com', '{code}', TRUE, '{admin}', '2026-11-20 00:00:00', \
         '{admin}', '2026-11-20 00:00:00')"
    ))
    .await;
    assert!(
        contains(&db.stored_bytes().await, key),
        "sanity: the clear key is on disk"
    );

    db.db.migrate().await.expect("migrate");
    assert_eq!(vault.seal_legacy_proxies().await.expect("seal"), 1);
    assert_eq!(
        vault.seal_legacy_proxies().await.expect("again"),
        0,
        "idempotent"
    );

    let proxy = vault
        .proxy_by_key(key)
        .await
        .expect("lookup")
        .expect("found by its key");
    assert_eq!(proxy.key.expose(), key);
    assert_eq!(
        proxy
            .request_transform
            .as_ref()
            .map(|c| c.expose().as_str()),
        Some(code)
    );
    let bytes = db.stored_bytes().await;
    assert!(
        contains(&bytes, "api.example.com"),
        "sanity: the row is there"
    );
    assert!(!contains(&bytes, key), "no clear key left on disk");
    assert!(
        !contains(&bytes, "LEGACY_CODE_MARKER"),
        "no clear code left on disk"
    );

    // A proxy written now never has a clear copy.
    let admin = vault
        .authenticate(Some(api_key.expose()))
        .await
        .expect("admin");
    let input: ProxyInput = serde_json::from_value(serde_json::json!({
        "name": "new", "destination_url": "https://api.example.com",
        "request_transform": {"code": "module.exports = async () => ({ body: 'NEW_CODE_MARKER' });"},
        "configuration": {"API_KEY": "NEW_CONFIG_MARKER"}
    }))
    .expect("input");
    let created = vault.create_proxy(&admin, input).await.expect("proxy");
    let bytes = db.stored_bytes().await;
    for secret in [
        created.key.expose().as_str(),
        "NEW_CODE_MARKER",
        "NEW_CONFIG_MARKER",
    ] {
        assert!(!contains(&bytes, secret), "{secret} is on disk");
    }
    let found = vault
        .proxy_by_key(created.key.expose())
        .await
        .expect("lookup")
        .expect("found");
    assert_eq!(found.id, created.id);
}
