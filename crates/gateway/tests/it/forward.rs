//! `forward` (docs/api.md, "Proxy invocation", step 4): the request goes to the destination through the
//! SSRF-guarded client and the destination's answer is relayed as it is; private addresses and
//! plain `http` are refused when private destinations are not allowed; an unreachable
//! destination is a 502, a slow one a 504; TLS destinations may be signed by an extra CA.

use std::{io::Write, sync::Arc, time::Duration};

use http::Method;
use serde_json::json;
use tessera_gateway::{ClientConfig, GatewayConfig};
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Options},
    upstream::TestPki,
};

backend_tests!(
    destination_errors_pass_through_unwrapped,
    private_destinations_are_not_allowed,
    plain_http_destinations_are_refused,
    an_unreachable_destination_is_a_502,
    a_destination_slower_than_the_timeout_is_a_504,
    a_tls_destination_signed_by_an_extra_ca_is_reached,
    a_tls_destination_without_its_ca_is_a_502,
);

/// A harness whose gateway uses `client` and whose upstream serves TLS with `pki` when given.
async fn start_with_client(
    db: &TestDatabase,
    client: ClientConfig,
    pki: Option<Arc<TestPki>>,
) -> Harness {
    let defaults = Options::default();
    Harness::start_with(
        db,
        Options {
            config: GatewayConfig {
                client,
                ..defaults.config.clone()
            },
            tls: pki,
            ..defaults
        },
    )
    .await
}

/// A gateway that refuses private destinations (and plain `http`).
async fn strict(db: &TestDatabase) -> Harness {
    start_with_client(
        db,
        ClientConfig {
            allow_private_destinations: false,
            ..ClientConfig::default()
        },
        None,
    )
    .await
}

async fn destination_errors_pass_through_unwrapped(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    for status in ["404", "422", "500", "503"] {
        let r = g
            .call_keyed(
                Method::POST,
                "/proxy",
                (&pkey, &key),
                &[("x-echo-status", status)],
                "x",
            )
            .await;
        assert_eq!(r.status.to_string(), status);
        assert!(
            r.body.get("proxy_error").is_none(),
            "destination errors are never wrapped"
        );
        assert_eq!(r.body["method"], json!("POST"));
        assert_eq!(r.header("svc-proxy-destination-status"), Some(status));
    }
}

async fn private_destinations_are_not_allowed(db: &TestDatabase) {
    let g = strict(db).await;
    let key = g.use_key().await;
    for dest in [
        format!("https://localhost:{}/", g.upstream.addr.port()),
        format!("https://127.0.0.1:{}/", g.upstream.addr.port()),
    ] {
        let (_, pkey) = g
            .proxy(json!({"name": "internal", "destination_url": dest}))
            .await;
        let r = g
            .keyed(Method::GET, "/proxy", &pkey, &key)
            .await
            .proxy_error(502);
        assert_eq!(
            r.body["proxy_error"]["detail"],
            json!("destination address not allowed")
        );
    }
    assert_eq!(g.upstream.hits(), 0, "the upstream saw nothing");
}

/// Plain http is refused too (a proxy stored by a process that allowed it is not trusted).
async fn plain_http_destinations_are_refused(db: &TestDatabase) {
    let g = strict(db).await;
    let key = g.use_key().await;
    let (_, insecure) = g
        .proxy(json!({"name": "insecure", "destination_url": "http://api.example.com/"}))
        .await;
    let r = g
        .keyed(Method::GET, "/proxy", &insecure, &key)
        .await
        .proxy_error(502);
    assert!(r.detail().contains("plain http"), "{}", r.body);
    assert_eq!(g.upstream.hits(), 0, "the upstream saw nothing");
}

/// A gateway allowing private destinations that waits at most 300 ms for one.
async fn quick(db: &TestDatabase) -> Harness {
    start_with_client(
        db,
        ClientConfig {
            allow_private_destinations: true,
            destination_timeout: Duration::from_millis(300),
            ..ClientConfig::default()
        },
        None,
    )
    .await
}

async fn an_unreachable_destination_is_a_502(db: &TestDatabase) {
    let g = quick(db).await;
    let key = g.use_key().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let (_, dead) = g
        .proxy(json!({"name": "dead", "destination_url": format!("http://127.0.0.1:{closed}/")}))
        .await;
    g.keyed(Method::GET, "/proxy", &dead, &key)
        .await
        .proxy_error(502);
}

async fn a_destination_slower_than_the_timeout_is_a_504(db: &TestDatabase) {
    let g = quick(db).await;
    let key = g.use_key().await;
    let slow = g.plain_proxy().await;
    g.call_keyed(
        Method::GET,
        "/proxy",
        (&slow, &key),
        &[("x-echo-delay-ms", "2000")],
        "",
    )
    .await
    .proxy_error(504);
    g.keyed(Method::GET, "/proxy", &slow, &key)
        .await
        .expect(200);
}

async fn a_tls_destination_signed_by_an_extra_ca_is_reached(db: &TestDatabase) {
    let pki = Arc::new(TestPki::new());
    let mut ca = tempfile::NamedTempFile::new().expect("ca file");
    ca.write_all(pki.ca_pem.as_bytes()).expect("write ca");
    let config = ClientConfig {
        allow_private_destinations: true,
        extra_ca_file: Some(ca.path().to_path_buf()),
        ..ClientConfig::default()
    };
    let g = start_with_client(db, config, Some(pki)).await;
    let key = g.use_key().await;
    let token = g.token(json!("4242424242424242"), None).await;
    let (_, pkey) = g
        .proxy(json!({"name": "tls", "destination_url": format!("https://localhost:{}/secure", g.upstream.addr.port())}))
        .await;
    let r = g
        .call_keyed(
            Method::POST,
            "/proxy/x",
            (&pkey, &key),
            &[("content-type", "application/json")],
            &format!(r#"{{"n":"{{{{{token}}}}}"}}"#),
        )
        .await
        .expect(200);
    assert_eq!(r.sent_json(), json!({"n": "4242424242424242"}));
    assert_eq!(r.echoed()["path"], json!("/secure/x"));
    assert_eq!(
        r.echoed()["headers"]["host"],
        json!(format!("localhost:{}", g.upstream.addr.port()))
    );
}

/// Without the CA, the same destination is a TLS failure: 502.
async fn a_tls_destination_without_its_ca_is_a_502(db: &TestDatabase) {
    let config = ClientConfig {
        allow_private_destinations: true,
        ..ClientConfig::default()
    };
    let g = start_with_client(db, config, Some(Arc::new(TestPki::new()))).await;
    let key = g.use_key().await;
    let (_, pkey) = g
        .proxy(json!({"name": "tls", "destination_url": format!("https://localhost:{}/", g.upstream.addr.port())}))
        .await;
    g.keyed(Method::GET, "/proxy", &pkey, &key)
        .await
        .proxy_error(502);
}
