//! Credential brokering, on both backends: destination-bound tokens go only to the
//! hosts their binding allows, through pre-configured and ephemeral proxies alike; the
//! ephemeral proxy's authentication, permission, URL and SSRF rules; transforms cannot read a
//! bound token off its destination; redirects are not followed; the audit trail names the
//! destination.

use http::Method;
use serde_json::json;
use tessera_domain::{
    audit::{AuditAction, AuditFilter, Outcome, ResourceId},
    PageRequest, TokenId, TokenPatch,
};
use tessera_gateway::GatewayConfig;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Options},
};

backend_tests!(
    bound_tokens_go_only_to_matching_destinations,
    one_refused_token_refuses_the_whole_request,
    the_ephemeral_proxy_forwards_bound_tokens_to_the_named_url,
    the_ephemeral_proxy_needs_a_key_with_token_use,
    the_ephemeral_proxy_refuses_unbound_tokens_unless_allowed,
    svc_proxy_url_is_checked_like_a_destination,
    ephemeral_proxies_can_be_turned_off,
    a_transform_cannot_read_a_bound_token_off_its_destination,
    redirects_are_returned_not_followed,
    a_patched_binding_applies_at_once,
    the_trail_names_the_destination_and_the_refusals,
    a_binding_widened_in_the_database_opens_nothing,
);

/// `g.call` with a JSON content type when there is a body (expressions are found in typed
/// bodies only).
async fn send(
    g: &Harness,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> tessera_testkit::gateway::Reply {
    let mut headers = headers.to_vec();
    if !body.is_empty() {
        headers.push(("content-type", "application/json"));
    }
    g.call(method, path, &headers, body).await
}

fn upstream_host(g: &Harness) -> String {
    format!("127.0.0.1:{}", g.upstream.addr.port())
}

async fn bound(g: &Harness, secret: &str, patterns: &[&str]) -> String {
    g.bound_token(json!(secret), None, Some(patterns)).await
}

async fn bound_tokens_go_only_to_matching_destinations(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
    ];
    let port = g.upstream.addr.port().to_string();
    let before = g.upstream.hits();
    for (patterns, allowed) in [
        (vec!["127.0.0.1".to_string()], true),
        (vec![format!("127.0.0.1:{port}")], true),
        (vec!["127.0.0.1:1".to_string()], false),
        (vec!["127.0.0.2".to_string()], false),
        (
            vec!["api.stripe.com".to_string(), "127.0.0.1".to_string()],
            true,
        ),
        (vec!["*.0.0.1".to_string()], false),
        (vec!["localhost".to_string()], false),
    ] {
        let p: Vec<&str> = patterns.iter().map(String::as_str).collect();
        let id = bound(&g, "sk_live_bound", &p).await;
        let body = format!(r#"{{"secret":"{{{{ {id} }}}}"}}"#);
        let r = send(&g, Method::POST, "/proxy", &h, &body).await;
        if allowed {
            assert_eq!(
                r.expect(200).sent_json()["secret"],
                "sk_live_bound",
                "{p:?}"
            );
        } else {
            let r = r.proxy_error(403);
            assert!(
                r.detail().contains(&id) && r.detail().contains("not allowed"),
                "{p:?}: {}",
                r.detail()
            );
        }
    }
    assert_eq!(
        g.upstream.hits(),
        before + 3,
        "refused requests were not sent"
    );
}

/// A bound and an unbound token in one request: the bound one's refusal refuses it all.
async fn one_refused_token_refuses_the_whole_request(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let free = g.token(json!("free"), None).await;
    let elsewhere = bound(&g, "elsewhere", &["api.stripe.com"]).await;
    let before = g.upstream.hits();
    let body = format!(r#"{{"a":"{{{{ {free} }}}}","b":"{{{{ {elsewhere} }}}}"}}"#);
    send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
        &body,
    )
    .await
    .proxy_error(403);
    assert_eq!(g.upstream.hits(), before, "nothing was sent");
}

async fn the_ephemeral_proxy_forwards_bound_tokens_to_the_named_url(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let key = g.use_key().await;
    let id = bound(&g, "sk_live_e", &[&upstream_host(&g)]).await;
    let url = g.upstream_url();
    let r = send(
        &g,
        Method::POST,
        "/proxy/v1/charges?x=1",
        &[("svc-proxy-url", &url), ("svc-api-key", &key)],
        &format!(r#"{{"auth":"Bearer {{{{ {id} }}}}"}}"#),
    )
    .await
    .expect(200);
    assert_eq!(r.sent_json()["auth"], "Bearer sk_live_e");
    assert_eq!(r.echoed()["path"], "/base/v1/charges");
    assert_eq!(r.echoed()["query"], "x=1");
    assert!(
        r.echoed()["headers"].get("svc-proxy-url").is_none(),
        "stripped"
    );
    assert!(r.echoed()["headers"].get("svc-api-key").is_none());
    assert_eq!(r.header("svc-proxy-destination-status"), Some("200"));
    // Headers are detokenized too.
    let r = send(
        &g,
        Method::GET,
        "/proxy",
        &[
            ("svc-proxy-url", &url),
            ("svc-api-key", &key),
            ("authorization", &format!("Bearer {{{{ {id} }}}}")),
        ],
        "",
    )
    .await
    .expect(200);
    assert_eq!(r.echoed()["headers"]["authorization"], "Bearer sk_live_e");
}

async fn the_ephemeral_proxy_needs_a_key_with_token_use(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let url = g.upstream_url();
    let id = bound(&g, "x", &[&upstream_host(&g)]).await;
    let body = format!(r#"{{"a":"{{{{ {id} }}}}"}}"#);
    let before = g.upstream.hits();
    send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-url", &url)],
        &body,
    )
    .await
    .proxy_error(401);
    send(
        &g,
        Method::POST,
        "/proxy",
        &[
            ("svc-proxy-url", &url),
            ("svc-api-key", "key_unknownunknownunknownunknown12"),
        ],
        &body,
    )
    .await
    .proxy_error(401);
    let reader = g
        .key(json!({"name": "r", "type": "private", "permissions": ["token:read"]}))
        .await;
    send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-url", &url), ("svc-api-key", &reader)],
        &body,
    )
    .await
    .proxy_error(403);
    let elsewhere = g
        .key(json!({"name": "u", "type": "private", "permissions": [],
                    "rules": [{"priority": 1, "container": "/pci/", "permissions": ["token:use"]}]}))
        .await;
    let r = send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-url", &url), ("svc-api-key", &elsewhere)],
        &body,
    )
    .await
    .proxy_error(403);
    assert!(r.detail().contains("token:use"), "{}", r.detail());
    assert_eq!(g.upstream.hits(), before);
}

async fn the_ephemeral_proxy_refuses_unbound_tokens_unless_allowed(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let key = g.use_key().await;
    let free = g.token(json!("unbound"), None).await;
    let url = g.upstream_url();
    let body = format!(r#"{{"a":"{{{{ {free} }}}}"}}"#);
    let r = send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-url", &url), ("svc-api-key", &key)],
        &body,
    )
    .await
    .proxy_error(403);
    assert!(r.detail().contains("not bound"), "{}", r.detail());
    // Nothing to detokenize: forwarded.
    send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-url", &url), ("svc-api-key", &key)],
        "{}",
    )
    .await
    .expect(200);

    let mut options = Options::default();
    options.config.ephemeral_unbound_tokens = true;
    let g = Harness::start_with(db, options).await;
    let key = g.use_key().await;
    let free = g.token(json!("unbound"), None).await;
    let body = format!(r#"{{"a":"{{{{ {free} }}}}"}}"#);
    let r = send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-url", &g.upstream_url()), ("svc-api-key", &key)],
        &body,
    )
    .await
    .expect(200);
    assert_eq!(r.sent_json()["a"], "unbound");
}

/// `SVC-PROXY-URL` passes the checks a proxy's destination does, and the SSRF guard at
/// connect time: here with private destinations not allowed.
async fn svc_proxy_url_is_checked_like_a_destination(db: &TestDatabase) {
    let mut options = Options::default();
    options.config.client.allow_private_destinations = false;
    let g = Harness::start_with(db, options).await;
    let key = g.use_key().await;
    let pkey = g.plain_proxy().await;
    for url in [
        "http://example.com/",
        "https://127.0.0.1/",
        "https://[::1]/",
        "https://169.254.169.254/latest",
        "https://10.0.0.1:8443/",
        "https://user:pw@example.com/",
        "ftp://example.com/",
        "not a url",
        "/relative",
    ] {
        let r = g
            .call(
                Method::GET,
                "/proxy",
                &[("svc-proxy-url", url), ("svc-api-key", &key)],
                "",
            )
            .await
            .proxy_error(400);
        assert!(
            r.detail().starts_with("SVC-PROXY-URL"),
            "{url}: {}",
            r.detail()
        );
    }
    // A name that resolves to loopback is refused when connecting.
    send(
        &g,
        Method::GET,
        "/proxy",
        &[
            ("svc-proxy-url", "https://localhost/"),
            ("svc-api-key", &key),
        ],
        "",
    )
    .await
    .proxy_error(502);
    // Both ways of naming a proxy at once.
    let r = send(
        &g,
        Method::GET,
        "/proxy",
        &[
            ("svc-proxy-url", "https://example.com/"),
            ("svc-proxy-key", &pkey),
            ("svc-api-key", &key),
        ],
        "",
    )
    .await
    .proxy_error(400);
    assert!(
        r.detail().contains("cannot be used together"),
        "{}",
        r.detail()
    );
}

async fn ephemeral_proxies_can_be_turned_off(db: &TestDatabase) {
    let mut options = Options::default();
    options.config = GatewayConfig {
        ephemeral_proxy: false,
        ..options.config
    };
    let g = Harness::start_with(db, options).await;
    let key = g.use_key().await;
    let r = send(
        &g,
        Method::GET,
        "/proxy",
        &[("svc-proxy-url", &g.upstream_url()), ("svc-api-key", &key)],
        "",
    )
    .await
    .proxy_error(400);
    assert_eq!(r.detail(), "ephemeral proxies are disabled");
}

async fn a_transform_cannot_read_a_bound_token_off_its_destination(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let reader = g
        .key(json!({"name": "svc", "type": "private", "permissions": ["token:read"]}))
        .await;
    let app = g.vault.authenticate(Some(&reader)).await.expect("app");
    let code = "module.exports = async (req) => { \
        try { const t = await req.svc.tokens.retrieve(req.args.body.id); \
              return { body: { got: t.data }, headers: req.args.headers }; } \
        catch (e) { return { body: { refused: e.status, why: e.message }, headers: req.args.headers }; } };";
    let (_, pkey) = g
        .proxy(
            json!({"name": "t", "destination_url": g.upstream_url(), "require_auth": false,
                      "application": {"id": app.application_id().to_string()},
                      "request_transform": {"code": code}}),
        )
        .await;
    let here = bound(&g, "ok-here", &["127.0.0.1"]).await;
    let there = bound(&g, "only-stripe", &["api.stripe.com"]).await;
    let call = |id: String| {
        let pkey = pkey.clone();
        let g = &g;
        async move {
            send(
                g,
                Method::POST,
                "/proxy",
                &[
                    ("svc-proxy-key", &pkey),
                    ("content-type", "application/json"),
                ],
                &json!({"id": id}).to_string(),
            )
            .await
            .expect(200)
            .sent_json()
        }
    };
    assert_eq!(call(here).await["got"], "ok-here");
    let refused = call(there).await;
    assert_eq!(refused["refused"], 403, "{refused}");
    assert!(refused.get("got").is_none());
}

async fn redirects_are_returned_not_followed(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let key = g.use_key().await;
    let id = bound(&g, "x", &["127.0.0.1"]).await;
    let before = g.upstream.hits();
    let r = send(
        &g,
        Method::POST,
        "/proxy",
        &[
            ("svc-proxy-url", &g.upstream_url()),
            ("svc-api-key", &key),
            ("x-echo-status", "307"),
        ],
        &format!(r#"{{"a":"{{{{ {id} }}}}"}}"#),
    )
    .await;
    assert_eq!(r.status, 307);
    assert_eq!(g.upstream.hits(), before + 1, "sent once, not followed");
}

/// A binding changed with PATCH applies to the next request (this process drops its cached
/// row at once; others within the cache lifetime), and only a reader may change it.
async fn a_patched_binding_applies_at_once(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let id = g.token(json!("rebind"), None).await;
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
    ];
    let body = format!(r#"{{"a":"{{{{ {id} }}}}"}}"#);
    send(&g, Method::POST, "/proxy", &h, &body)
        .await
        .expect(200);
    let token: TokenId = id.parse().expect("id");
    let patch = |v: serde_json::Value| -> TokenPatch { serde_json::from_value(v).expect("patch") };
    g.vault
        .update_token(
            &g.admin,
            token.clone(),
            patch(json!({"destinations": ["api.stripe.com"]})),
        )
        .await
        .expect("bind");
    send(&g, Method::POST, "/proxy", &h, &body)
        .await
        .proxy_error(403);
    g.vault
        .update_token(
            &g.admin,
            token.clone(),
            patch(json!({"destinations": null})),
        )
        .await
        .expect("unbind");
    send(&g, Method::POST, "/proxy", &h, &body)
        .await
        .expect(200);
    // Choosing where data may go needs token:read.
    let updater = g
        .key(json!({"name": "up", "type": "private", "permissions": ["token:update"]}))
        .await;
    let updater = g.vault.authenticate(Some(&updater)).await.expect("key");
    assert!(g
        .vault
        .update_token(
            &updater,
            token,
            patch(json!({"destinations": ["evil.example"]}))
        )
        .await
        .is_err());
}

async fn the_trail_names_the_destination_and_the_refusals(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let key = g.use_key().await;
    let id = bound(&g, "x", &["127.0.0.1"]).await;
    let other = bound(&g, "y", &["api.stripe.com"]).await;
    let url = g.upstream_url();
    let h = [
        ("svc-proxy-url", url.as_str()),
        ("svc-api-key", key.as_str()),
    ];
    send(
        &g,
        Method::POST,
        "/proxy",
        &h,
        &format!(r#"{{"a":"{{{{ {id} }}}}"}}"#),
    )
    .await
    .expect(200);
    send(
        &g,
        Method::POST,
        "/proxy",
        &h,
        &format!(r#"{{"a":"{{{{ {other} }}}}"}}"#),
    )
    .await
    .proxy_error(403);
    let page = g
        .vault
        .list_audit_events(
            &g.admin,
            &AuditFilter {
                actions: vec![AuditAction::TokenDetokenized],
                ..AuditFilter::default()
            },
            PageRequest::new(Some(1), Some(10)).expect("page"),
        )
        .await
        .expect("trail");
    let events: Vec<_> = page.items.iter().rev().map(|e| &e.event).collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].outcome, Outcome::Success);
    assert_eq!(
        events[0].destination.as_deref(),
        Some(upstream_host(&g).as_str())
    );
    assert!(events[0].ephemeral && events[0].proxy_id.is_none());
    assert_eq!(events[1].outcome, Outcome::Denied);
    assert!(events[1].ephemeral);
    assert!(events[1]
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("not allowed"));
    assert_eq!(
        events[1].resource_ids,
        vec![ResourceId::from(other.parse::<TokenId>().expect("id"))]
    );
}

/// With write access to the database, widening a binding does not help: the binding is part
/// of what the token's ciphertext is bound to, so the data no longer opens and nothing is sent.
async fn a_binding_widened_in_the_database_opens_nothing(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let id = bound(&g, "sk_live_pinned", &["api.stripe.com"]).await;
    db.execute(&format!(
        "UPDATE tokens SET destinations = '[\"127.0.0.1\"]' WHERE id = '{id}'"
    ))
    .await;
    let before = g.upstream.hits();
    send(
        &g,
        Method::POST,
        "/proxy",
        &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
        &format!(r#"{{"a":"{{{{ {id} }}}}"}}"#),
    )
    .await
    .proxy_error(500);
    assert_eq!(g.upstream.hits(), before, "nothing was sent");
}
