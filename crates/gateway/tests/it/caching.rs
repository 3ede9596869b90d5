//! The vault's caches (proxy keys, API keys, token rows) never outlive a deletion made in this
//! process: a deleted token or proxy stops working at once, however long the cache lifetime.

use std::time::Duration;

use serde_json::json;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Options},
};

backend_tests!(
    a_deleted_token_stops_working_at_once,
    a_deleted_proxy_stops_working_at_once,
);

/// A gateway whose caches would keep entries far longer than the test runs.
async fn long_lived_caches(db: &TestDatabase) -> Harness {
    Harness::start_with(
        db,
        Options {
            cache_ttl: Some(Duration::from_secs(600)),
            ..Options::default()
        },
    )
    .await
}

async fn a_deleted_token_stops_working_at_once(db: &TestDatabase) {
    let g = long_lived_caches(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let token = g.token(json!("v"), None).await;
    let body = format!(r#"["{{{{{token}}}}}"]"#);
    // Warm every cache: proxy key, API key and the token row.
    g.post_json(&pkey, Some(&key), &body).await.expect(200);
    g.vault
        .delete_token(&g.admin, token.parse().expect("id"))
        .await
        .expect("delete token");
    let r = g.post_json(&pkey, Some(&key), &body).await.proxy_error(400);
    assert!(r.detail().contains("not found"), "{}", r.body);
}

async fn a_deleted_proxy_stops_working_at_once(db: &TestDatabase) {
    let g = long_lived_caches(db).await;
    let key = g.use_key().await;
    let (proxy_id, pkey) = g
        .proxy(json!({"name": "p", "destination_url": g.upstream_url()}))
        .await;
    let token = g.token(json!("v"), None).await;
    // Warm every cache: proxy key, API key and the token row.
    g.post_json(&pkey, Some(&key), &format!(r#"["{{{{{token}}}}}"]"#))
        .await
        .expect(200);
    g.vault
        .delete_proxy(&g.admin, proxy_id.parse().expect("id"))
        .await
        .expect("delete proxy");
    g.post_json(&pkey, Some(&key), "[]").await.proxy_error(401);
}
