//! The gateway's metrics at `/metrics` (Prometheus text): answers by status class, tokens
//! detokenized, refusals by reason, time spent at the destination; never a token or a key.

use http::Method;
use serde_json::json;
use tessera_gateway::{ClientConfig, GatewayConfig};
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Options},
};

backend_tests!(
    answers_are_counted_by_status_class,
    detokenized_tokens_are_counted,
    refusals_are_counted_by_reason,
    blocked_destinations_are_counted,
    time_at_the_destination_is_measured,
    metrics_never_name_tokens_or_keys,
    rendering_is_stable,
);

/// What `/metrics` says after one request refused as too large (413) and one forwarded with a
/// token detokenized, on a gateway accepting bodies of at most 1024 bytes: the harness, the
/// token's id, the proxy key and the text.
async fn after_one_refused_and_one_forwarded(
    db: &TestDatabase,
) -> (Harness, String, String, String) {
    let defaults = Options::default();
    let g = Harness::start_with(
        db,
        Options {
            config: GatewayConfig {
                max_body_bytes: 1024,
                ..defaults.config.clone()
            },
            ..defaults
        },
    )
    .await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let token = g.token(json!("v"), None).await;
    g.post_json(&pkey, Some(&key), &"x".repeat(2048))
        .await
        .proxy_error(413);
    g.post_json(&pkey, Some(&key), &format!(r#"["{{{{{token}}}}}"]"#))
        .await
        .expect(200);
    let r = g.call(Method::GET, "/metrics", &[], "").await.expect(200);
    let text = r.body.as_str().expect("text").to_string();
    (g, token, pkey, text)
}

async fn answers_are_counted_by_status_class(db: &TestDatabase) {
    let (_g, _, _, text) = after_one_refused_and_one_forwarded(db).await;
    assert!(
        text.contains(r#"tessera_http_requests_total{class="2xx",component="gateway"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"tessera_http_requests_total{class="4xx",component="gateway"} 1"#),
        "{text}"
    );
}

async fn detokenized_tokens_are_counted(db: &TestDatabase) {
    let (_g, _, _, text) = after_one_refused_and_one_forwarded(db).await;
    assert!(
        text.contains("tessera_tokens_detokenized_total 1"),
        "{text}"
    );
}

async fn refusals_are_counted_by_reason(db: &TestDatabase) {
    let (_g, _, _, text) = after_one_refused_and_one_forwarded(db).await;
    assert!(
        text.contains(r#"tessera_gateway_errors_total{reason="too_large"} 1"#),
        "{text}"
    );
}

async fn blocked_destinations_are_counted(db: &TestDatabase) {
    let defaults = Options::default();
    let g = Harness::start_with(
        db,
        Options {
            config: GatewayConfig {
                client: ClientConfig {
                    allow_private_destinations: false,
                    ..ClientConfig::default()
                },
                ..defaults.config.clone()
            },
            ..defaults
        },
    )
    .await;
    let key = g.use_key().await;
    for dest in [
        format!("https://localhost:{}/", g.upstream.addr.port()),
        format!("https://127.0.0.1:{}/", g.upstream.addr.port()),
        "http://api.example.com/".to_string(),
    ] {
        let (_, pkey) = g
            .proxy(json!({"name": "blocked", "destination_url": dest}))
            .await;
        g.keyed(Method::GET, "/proxy", &pkey, &key)
            .await
            .proxy_error(502);
    }
    let text = g.registry.render();
    assert!(
        text.contains(r#"tessera_gateway_errors_total{reason="blocked"} 3"#),
        "{text}"
    );
}

async fn time_at_the_destination_is_measured(db: &TestDatabase) {
    let (_g, _, _, text) = after_one_refused_and_one_forwarded(db).await;
    assert!(
        text.contains("tessera_gateway_destination_seconds_count 1"),
        "{text}"
    );
}

async fn metrics_never_name_tokens_or_keys(db: &TestDatabase) {
    let (_g, token, pkey, text) = after_one_refused_and_one_forwarded(db).await;
    assert!(
        !text.contains(&token) && !text.contains(&pkey),
        "metrics never name tokens or keys"
    );
}

async fn rendering_is_stable(db: &TestDatabase) {
    let (g, _, _, _) = after_one_refused_and_one_forwarded(db).await;
    assert_eq!(g.registry.render(), g.registry.render());
}
