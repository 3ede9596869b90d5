//! `authenticate` (docs/api.md, "Proxy invocation", step 2): on a `require_auth` proxy, a valid API key of the
//! proxy's tenant with `token:use` somewhere (and on the container of every token used); on an
//! anonymous proxy no key, and expressions pass through untouched.

use http::Method;
use serde_json::json;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, USE_ALL},
};

backend_tests!(
    a_missing_api_key_is_a_401,
    a_malformed_api_key_is_a_401,
    token_use_is_needed_even_when_nothing_is_detokenized,
    token_use_is_needed_on_each_tokens_container,
    a_scoped_key_uses_tokens_of_its_containers,
    refused_requests_never_reach_the_destination,
    another_tenants_key_is_refused_like_an_unknown_key,
    anonymous_proxies_need_no_key_and_forward_expressions_untouched,
);

fn card(id: &str) -> String {
    format!(r#"{{"card": "{{{{{id}}}}}"}}"#)
}

async fn a_missing_api_key_is_a_401(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let pkey = g.plain_proxy().await;
    let token = g.token(json!("4242424242424242"), None).await;
    g.post_json(&pkey, None, &card(&token))
        .await
        .proxy_error(401);
}

async fn a_malformed_api_key_is_a_401(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let pkey = g.plain_proxy().await;
    let token = g.token(json!("4242424242424242"), None).await;
    g.post_json(&pkey, Some("key_bad"), &card(&token))
        .await
        .proxy_error(401);
}

async fn token_use_is_needed_even_when_nothing_is_detokenized(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let pkey = g.plain_proxy().await;
    let reader = g
        .key(json!({"name": "reader", "type": "private", "permissions": ["token:read"]}))
        .await;
    g.post_json(&pkey, Some(&reader), "{}")
        .await
        .proxy_error(403);
}

async fn scoped_key(g: &Harness) -> String {
    g.key(json!({"name": "scoped", "type": "private", "rules": [
        {"priority": 1, "container": "/general/", "permissions": ["token:use"]}]}))
        .await
}

async fn token_use_is_needed_on_each_tokens_container(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let pkey = g.plain_proxy().await;
    let secret = g.token(json!("top"), Some("/secret/")).await;
    let r = g
        .post_json(&pkey, Some(&scoped_key(&g).await), &card(&secret))
        .await
        .proxy_error(403);
    assert!(r.detail().contains("token:use"), "{}", r.detail());
}

async fn a_scoped_key_uses_tokens_of_its_containers(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let pkey = g.plain_proxy().await;
    let general = g.token(json!("4242424242424242"), None).await;
    let r = g
        .post_json(&pkey, Some(&scoped_key(&g).await), &card(&general))
        .await
        .expect(200);
    assert_eq!(r.sent_json(), json!({"card": "4242424242424242"}));
    let r = g
        .post_json(&pkey, Some(&g.use_key().await), &card(&general))
        .await
        .expect(200);
    assert_eq!(r.sent_json(), json!({"card": "4242424242424242"}));
}

async fn refused_requests_never_reach_the_destination(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let pkey = g.plain_proxy().await;
    let secret = g.token(json!("top"), Some("/secret/")).await;
    let scoped = scoped_key(&g).await;
    let before = g.upstream.hits();
    g.post_json(&pkey, None, "{}").await.proxy_error(401);
    g.post_json(&pkey, Some(&scoped), &card(&secret))
        .await
        .proxy_error(403);
    g.post_json(&pkey, Some(&scoped), "{}").await.expect(200);
    assert_eq!(g.upstream.hits(), before + 1);
}

/// Tenant B's API key with tenant A's proxy key ran A's
/// transforms with A's configuration and forwarded B's data. The caller's key must belong to the
/// proxy's tenant; otherwise the answer is exactly the unknown-key 401.
async fn another_tenants_key_is_refused_like_an_unknown_key(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (_, pkey) = g
        .proxy(json!({
            "name": "a's proxy",
            "destination_url": g.upstream_url(),
            "configuration": {"SECRET": "tenant-a-secret"},
            "request_transform": {"code": "module.exports = async (req) => ({ body: { secret: req.configuration.SECRET }, headers: req.args.headers });"},
        }))
        .await;
    let other = g.vault.create_tenant("other").await.expect("tenant b");
    let b_admin = g
        .vault
        .authenticate(Some(other.api_key.expose()))
        .await
        .expect("b admin");
    let b_key = g
        .vault
        .create_application(
            &b_admin,
            serde_json::from_str(USE_ALL).expect("application input"),
        )
        .await
        .expect("b application")
        .api_key
        .expose()
        .to_string();
    let before = g.upstream.hits();
    for key in [b_key.as_str(), other.api_key.expose()] {
        let foreign = g.post_json(&pkey, Some(key), "{}").await.proxy_error(401);
        let unknown = g
            .post_json(&pkey, Some("key_0123456789abcdefghijABCDEFGHIJ01"), "{}")
            .await
            .proxy_error(401);
        assert_eq!(
            foreign.body, unknown.body,
            "no hint that the key is valid elsewhere"
        );
    }
    assert_eq!(g.upstream.hits(), before, "nothing reached the destination");
}

async fn anonymous_proxies_need_no_key_and_forward_expressions_untouched(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (_, pkey) = g
        .proxy(
            json!({"name": "inbound", "destination_url": g.upstream_url(), "require_auth": false}),
        )
        .await;
    let token = g.token(json!("secret"), None).await;
    let body = card(&token);
    for api_key in [None, Some("key_whatever")] {
        let r = g.post_json(&pkey, api_key, &body).await.expect(200);
        assert_eq!(
            r.echoed()["body"],
            json!(body),
            "expressions pass through; no data is revealed"
        );
    }
    let r = g
        .call(Method::GET, "/proxy", &[("svc-proxy-key", &pkey)], "")
        .await
        .expect(200);
    assert_eq!(r.echoed()["method"], json!("GET"));
}
