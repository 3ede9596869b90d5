//! `select_proxy` (docs/api.md, "Proxy invocation", step 1): the proxy key in the `SVC-PROXY-KEY` header, else
//! the `svc-proxy-key` query parameter; missing or unknown → 401 `proxy_error`; the key never
//! reaches the destination.

use http::Method;
use serde_json::{json, Value};
use tessera_domain::cache::CacheUsage;
use tessera_testkit::{backend_tests, db::TestDatabase, gateway::Harness};

backend_tests!(
    the_key_in_the_header_selects_the_proxy,
    the_key_in_the_query_selects_the_proxy_and_is_not_forwarded,
    the_header_wins_over_the_query,
    a_missing_proxy_key_is_a_401,
    an_unknown_proxy_key_is_a_401,
    junk_proxy_keys_are_401s_that_leave_nothing_in_memory,
);

async fn the_key_in_the_header_selects_the_proxy(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = g
        .keyed(Method::GET, "/proxy", &pkey, &key)
        .await
        .expect(200);
    assert_eq!(r.echoed()["path"], json!("/base"));
    assert!(r.echoed()["headers"].get("svc-proxy-key").is_none());
}

async fn the_key_in_the_query_selects_the_proxy_and_is_not_forwarded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = g
        .call(
            Method::GET,
            &format!("/proxy?svc-proxy-key={pkey}"),
            &[("svc-api-key", &key)],
            "",
        )
        .await
        .expect(200);
    assert_eq!(r.echoed()["path"], json!("/base"));
    assert_eq!(
        r.echoed()["query"],
        Value::Null,
        "svc-proxy-key never reaches the destination"
    );
}

async fn the_header_wins_over_the_query(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    g.keyed(
        Method::GET,
        "/proxy?svc-proxy-key=unknownunknownunknownunknown0000",
        &pkey,
        &key,
    )
    .await
    .expect(200);
    g.call(
        Method::GET,
        &format!("/proxy?svc-proxy-key={pkey}"),
        &[
            ("svc-proxy-key", "unknownunknownunknownunknown0000"),
            ("svc-api-key", &key),
        ],
        "",
    )
    .await
    .proxy_error(401);
}

async fn a_missing_proxy_key_is_a_401(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let key = g.use_key().await;
    let r = g
        .call(Method::GET, "/proxy", &[("svc-api-key", &key)], "")
        .await
        .proxy_error(401);
    assert!(r.detail().contains("SVC-PROXY-KEY"), "{}", r.detail());
}

async fn an_unknown_proxy_key_is_a_401(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let key = g.use_key().await;
    let hits = g.upstream.hits();
    let r = g
        .call(
            Method::GET,
            "/proxy",
            &[("svc-proxy-key", "nope"), ("svc-api-key", &key)],
            "",
        )
        .await
        .proxy_error(401);
    assert!(r.detail().contains("unknown"), "{}", r.detail());
    assert_eq!(g.upstream.hits(), hits);
}

/// Anonymous requests with huge unknown proxy keys (in the header, or the query) get the
/// unknown-key 401 and leave the caches as they were: the gateway's memory stays put. Before,
/// each key was cached as unknown, whatever its size (2,000 such requests grew a gateway by
/// 126 MiB).
async fn junk_proxy_keys_are_401s_that_leave_nothing_in_memory(db: &TestDatabase) {
    const MIB: u64 = 1024 * 1024;
    let g = Harness::start(db).await;
    let before = g.vault.cache_usage();
    for i in 0..2_000 {
        let junk = format!("{i:08}{}", "k".repeat(60 * 1024 - 8));
        let r = if i % 2 == 0 {
            g.call(Method::GET, "/proxy", &[("svc-proxy-key", &junk)], "")
                .await
        } else {
            g.call(
                Method::GET,
                &format!("/proxy?svc-proxy-key={junk}"),
                &[],
                "",
            )
            .await
        };
        let r = r.proxy_error(401);
        assert!(r.detail().contains("unknown"), "{}", r.detail());
    }
    let after = g.vault.cache_usage();
    assert_eq!(after.unknown_proxy_keys, CacheUsage::default());
    assert!(
        after.total().bytes <= before.total().bytes + MIB,
        "{before:?} → {after:?}"
    );
}
