//! Proxy keys not of the shape every invocation key has (32 ASCII letters and digits) are
//! answered "unknown" before any lookup: no store read, nothing cached.

use tessera_domain::{
    cache::CacheUsage,
    proxy::{DestinationPolicy, KEY_CHARS},
};
use tessera_testkit::{api::vault_with, backend_tests, db::TestDatabase};

backend_tests!(malformed_proxy_keys_are_refused_without_a_lookup);

async fn malformed_proxy_keys_are_refused_without_a_lookup(db: &TestDatabase) {
    let vault = vault_with(db, DestinationPolicy::default());
    // From here any read of the proxies fails: a key that reaches the store is an error.
    db.execute("ALTER TABLE proxies RENAME TO proxies_away")
        .await;
    assert!(
        vault.proxy_by_key(&"a".repeat(KEY_CHARS)).await.is_err(),
        "a well-formed key is looked up"
    );
    let malformed = [
        String::new(),
        "a".repeat(KEY_CHARS - 1),
        "a".repeat(KEY_CHARS + 1),
        format!("{}-", "a".repeat(KEY_CHARS - 1)),
        format!("{}_", "a".repeat(KEY_CHARS - 1)),
        format!("{}é", "a".repeat(KEY_CHARS - 2)),
        "k".repeat(60 * 1024),
    ];
    for key in &malformed {
        let found = vault.proxy_by_key(key).await;
        assert!(matches!(found, Ok(None)), "{key:.40}: {found:?}");
    }
    assert_eq!(vault.cache_usage().total(), CacheUsage::default());
}
