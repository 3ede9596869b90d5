//! `--header-prefix BT` (docs/migrating.md): the gateway reads `BT-PROXY-KEY`, `BT-API-KEY`,
//! the `bt-proxy-key` query parameter and `BT-TRACE-ID`, answers `BT-PROXY-DESTINATION-STATUS`,
//! gives transforms `req.bt` beside `req.svc`, reads no `SVC-*` name in their place, and
//! forwards no header of either prefix.

use http::Method;
use serde_json::json;
use tessera_service::header_names::HeaderNames;
use tessera_testkit::{
    db::TestDatabase,
    gateway::{Harness, Isolation, Options},
    isolation_backend_tests,
};

isolation_backend_tests!(
    the_chosen_names_carry_the_keys_and_no_prefixed_header_is_forwarded,
    the_default_names_are_not_read_beside_the_chosen_ones,
    the_proxy_key_may_come_in_the_prefixed_query_parameter,
    transforms_get_the_client_under_the_prefix_and_as_svc,
);

/// A harness whose gateway uses the prefix `BT`.
async fn bt(db: &TestDatabase, mode: Isolation) -> Harness {
    let mut options = Options::default().with_isolation(mode);
    options.config.names = HeaderNames::new("BT").expect("prefix");
    options.engine.client_alias = options.config.names.client_alias();
    Harness::start_with(db, options).await
}

async fn the_chosen_names_carry_the_keys_and_no_prefixed_header_is_forwarded(
    db: &TestDatabase,
    mode: Isolation,
) {
    let g = bt(db, mode).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let token = g.token(json!("s3cret"), None).await;
    let r = g
        .call(
            Method::POST,
            "/proxy/charges",
            &[
                ("BT-PROXY-KEY", &pkey),
                ("bt-api-key", &key),
                ("bt-trace-id", "trace-77"),
                ("bt-client-user-agent", "sdk"),
                ("svc-other", "stale client"),
                ("x-kept", "yes"),
                ("content-type", "application/json"),
            ],
            &format!(r#"{{"v":"{{{{{token}}}}}"}}"#),
        )
        .await
        .expect(200);
    assert_eq!(
        r.sent_json(),
        json!({"v": "s3cret"}),
        "detokenized as BT-API-KEY's caller"
    );
    let forwarded = r.echoed()["headers"].as_object().expect("headers");
    for name in forwarded.keys() {
        assert!(
            !name.starts_with("bt-") && !name.starts_with("svc-"),
            "{name} reached the destination"
        );
    }
    assert_eq!(forwarded["x-kept"], json!("yes"));
    assert_eq!(forwarded["x-request-id"], json!("trace-77"));
    assert_eq!(r.header("bt-proxy-destination-status"), Some("200"));
    assert_eq!(r.header("svc-proxy-destination-status"), None);
    assert_eq!(r.header("x-request-id"), Some("trace-77"));
}

async fn the_default_names_are_not_read_beside_the_chosen_ones(db: &TestDatabase, mode: Isolation) {
    let g = bt(db, mode).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = g
        .keyed(Method::GET, "/proxy", &pkey, &key)
        .await
        .proxy_error(401);
    assert!(
        r.detail().contains("BT-PROXY-KEY") && r.detail().contains("bt-proxy-key"),
        "the refusal names the deployment's header: {}",
        r.detail()
    );
    // A proxy that requires a caller: `SVC-API-KEY` is no key under `BT`.
    let token = g.token(json!("s3cret"), None).await;
    let r = g
        .call(
            Method::POST,
            "/proxy",
            &[
                ("bt-proxy-key", &pkey),
                ("svc-api-key", &key),
                ("content-type", "application/json"),
            ],
            &format!(r#"{{"v":"{{{{{token}}}}}"}}"#),
        )
        .await
        .proxy_error(401);
    assert!(!r.body.to_string().contains("s3cret"));
}

async fn the_proxy_key_may_come_in_the_prefixed_query_parameter(
    db: &TestDatabase,
    mode: Isolation,
) {
    let g = bt(db, mode).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let path = format!("/proxy/x?a=1&bt-proxy-key={pkey}&svc-proxy-key=stale");
    let r = g
        .call(Method::GET, &path, &[("bt-api-key", &key)], "")
        .await
        .expect(200);
    assert_eq!(r.echoed()["path"], json!("/base/x"));
    assert_eq!(
        r.echoed()["query"],
        json!("a=1"),
        "no proxy key of either prefix is forwarded"
    );
}

async fn transforms_get_the_client_under_the_prefix_and_as_svc(db: &TestDatabase, mode: Isolation) {
    let g = bt(db, mode).await;
    let app = g
        .key(json!({"name": "t", "type": "private", "permissions": ["token:create", "token:read"]}))
        .await;
    let issued = g.vault.authenticate(Some(&app)).await.expect("app");
    let code = "module.exports = async (req) => { \
        const t = await req.bt.tokens.create({ type: 'token', data: 'via-bt' }); \
        const back = await req.svc.tokens.retrieve(t.id); \
        return { body: { same: req.bt === req.svc, data: back.data }, \
                 headers: { 'content-type': 'application/json' } }; };";
    let (_, pkey) = g
        .proxy(
            json!({"name": "tr", "destination_url": g.upstream_url(), "require_auth": false,
            "application": {"id": issued.application_id().to_string()},
            "request_transform": {"code": code}}),
        )
        .await;
    let r = g
        .call(Method::POST, "/proxy", &[("bt-proxy-key", &pkey)], "")
        .await
        .expect(200);
    assert_eq!(r.sent_json(), json!({"same": true, "data": "via-bt"}));
}
