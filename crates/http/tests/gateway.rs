//! The proxy gateway end to end (source §4.7, §5, §7; SUPPLEMENT §5.1, §6): a real gateway on
//! a socket, a real upstream that echoes what it received, on both storage backends.

mod common;
#[path = "common/upstream.rs"]
mod upstream;

use std::{collections::HashMap, io::Write, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use serde_json::{json, Value};
use tessera_domain::{
    proxy::DestinationPolicy, ApplicationInput, MasterKey, NewToken, Principal, ProxyInput, Secret,
    TokenType, Vault,
};
use tessera_http::{gateway::ClientConfig, Gateway, GatewayConfig, Metrics};
use tessera_storage::{backend_tests, test_support::TestDatabase, DetachedStore};
use tessera_transform_runtime::{EngineConfig, TransformEngine};
use upstream::{TestPki, Upstream};

backend_tests!(
    routing_keys_paths_queries_methods_and_headers,
    authentication_and_token_use,
    another_tenants_key_is_refused_like_an_unknown_key,
    answers_never_depend_on_token_content,
    dot_segments_in_the_sub_path_are_refused,
    custom_responses_outside_final_statuses_fail,
    anonymous_proxies_forward_expressions_untouched,
    json_substitution_is_injection_safe,
    form_text_and_header_substitution,
    bad_expressions_unknown_and_foreign_tokens,
    destination_answers_pass_through,
    ssrf_guard_and_unreachable_and_slow_destinations,
    tls_destination_with_private_ca,
    limits_and_metrics,
    deleted_tokens_and_proxies_stop_working_at_once,
    request_transform_sees_every_field_and_shapes_the_request,
    response_transform_runs_on_2xx_only,
    svc_tokenizes_as_the_proxy_application,
    transform_errors_map_to_statuses,
    abusive_transforms_are_contained,
    parallel_invocations_awaiting_svc,
);

struct Env {
    vault: Vault,
    admin: Principal,
    base: String,
    upstream: Upstream,
    client: Client<HttpConnector, Full<Bytes>>,
    metrics: Arc<Metrics>,
}

struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

async fn env_with(
    db: &TestDatabase,
    client: ClientConfig,
    pki: Option<&TestPki>,
    max_body_bytes: usize,
) -> Env {
    let vault = Vault::new(
        Arc::new(DetachedStore::new(db.db.clone())),
        // One database, one master key: every vault a test opens on it uses the same key.
        MasterKey::from_base64("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=").expect("test key"),
    )
    .with_destination_policy(DestinationPolicy {
        allow_private_destinations: true,
    });
    let tenant = vault.create_tenant("acme").await.expect("tenant");
    let admin = vault
        .authenticate(Some(tenant.api_key.expose()))
        .await
        .expect("admin");
    let metrics = Arc::new(Metrics::new());
    let engine = TransformEngine::new(EngineConfig {
        workers: 2,
        time_limit: Duration::from_millis(500),
        memory_limit: 16 * 1024 * 1024,
        ..EngineConfig::default()
    })
    .expect("transform engine");
    let gateway = Gateway::new(
        vault.clone(),
        GatewayConfig {
            max_body_bytes,
            client,
            ..GatewayConfig::default()
        },
        metrics.clone(),
    )
    .expect("gateway")
    .with_transforms(engine);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(tessera_http::gateway::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    let upstream = Upstream::start(pki).await;
    let client = Client::builder(TokioExecutor::new()).build_http();
    Env {
        vault,
        admin,
        base,
        upstream,
        client,
        metrics,
    }
}

async fn env(db: &TestDatabase) -> Env {
    env_with(
        db,
        ClientConfig {
            allow_private_destinations: true,
            ..ClientConfig::default()
        },
        None,
        1024 * 1024,
    )
    .await
}

impl Env {
    fn upstream_url(&self) -> String {
        format!("http://127.0.0.1:{}/base", self.upstream.addr.port())
    }

    async fn proxy(&self, spec: Value) -> (String, String) {
        let input: ProxyInput = serde_json::from_value(spec).expect("proxy input");
        let p = self
            .vault
            .create_proxy(&self.admin, input)
            .await
            .expect("create proxy");
        (p.id.to_string(), p.key.expose().clone())
    }

    async fn key(&self, spec: Value) -> String {
        let input: ApplicationInput = serde_json::from_value(spec).expect("application input");
        self.vault
            .create_application(&self.admin, input)
            .await
            .expect("application")
            .api_key
            .expose()
            .to_string()
    }

    async fn token(&self, data: Value, container: Option<&str>) -> String {
        let t = NewToken {
            token_type: TokenType::Token,
            data: Some(Secret::new(data)),
            metadata: None,
            containers: container.map(|c| vec![c.to_string()]),
        };
        self.vault
            .create_token(&self.admin, t)
            .await
            .expect("token")
            .id
            .to_string()
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let res = self
            .client
            .request(
                req.body(Full::new(Bytes::from(body.to_string())))
                    .expect("request"),
            )
            .await
            .expect("gateway answers");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let raw = res.into_body().collect().await.expect("body").to_bytes();
        let body = serde_json::from_slice(&raw)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into()));
        Reply {
            status,
            headers,
            body,
        }
    }
}

impl Reply {
    fn expect(self, status: u16) -> Self {
        assert_eq!(self.status, status, "body: {}", self.body);
        self
    }

    /// A proxy error: `{"proxy_error": problem}` with JSON content type.
    fn proxy_error(self, status: u16) -> Self {
        let r = self.expect(status);
        assert_eq!(
            r.headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
        assert_eq!(r.body["proxy_error"]["status"], json!(status), "{}", r.body);
        assert!(r.body["proxy_error"]["detail"].is_string());
        assert!(
            !r.headers.contains_key("svc-proxy-destination-status"),
            "the destination was not involved"
        );
        r
    }

    /// What the upstream saw (the echo).
    fn echoed(&self) -> &Value {
        &self.body
    }

    fn sent_json(&self) -> Value {
        serde_json::from_str(self.body["body"].as_str().expect("echoed body"))
            .expect("upstream received JSON")
    }
}

const USE_ALL: &str = r#"{"name": "user", "type": "private", "permissions": ["token:use"]}"#;

async fn routing_keys_paths_queries_methods_and_headers(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "echo", "destination_url": e.upstream_url()}))
        .await;
    // Key in the header; sub-path and query appended; svc-* and hop-by-hop headers stripped.
    let r = e
        .call(
            Method::POST,
            "/proxy/charges/ch_1?expand=x&svc-proxy-key=ignored&b=%20",
            &[
                ("svc-proxy-key", &pkey),
                ("svc-api-key", &key),
                ("authorization", "Bearer dest-token"),
                ("x-custom", "kept"),
                ("connection", "x-hop"),
                ("x-hop", "dropped"),
                ("svc-other", "dropped"),
                ("x-request-id", "req-123"),
                ("content-type", "application/json"),
            ],
            r#"{"a":1}"#,
        )
        .await
        .expect(200);
    let echoed = r.echoed();
    assert_eq!(echoed["path"], json!("/base/charges/ch_1"));
    assert_eq!(echoed["query"], json!("expand=x&b=%20"));
    let h = &echoed["headers"];
    assert_eq!(
        h["authorization"],
        json!("Bearer dest-token"),
        "caller's destination auth is forwarded"
    );
    assert_eq!(h["x-custom"], json!("kept"));
    assert_eq!(
        h["x-request-id"],
        json!("req-123"),
        "the caller's request id reaches the destination"
    );
    assert_eq!(
        h["host"],
        json!(format!("127.0.0.1:{}", e.upstream.addr.port())),
        "Host comes from the destination"
    );
    for stripped in ["svc-proxy-key", "svc-api-key", "svc-other", "x-hop"] {
        assert!(
            h.get(stripped).is_none(),
            "{stripped} must not be forwarded"
        );
    }
    assert_eq!(
        r.headers
            .get("svc-proxy-destination-status")
            .and_then(|v| v.to_str().ok()),
        Some("200")
    );
    assert_eq!(
        r.headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        Some("req-123")
    );
    // Key in the query; `/proxy` alone forwards to the destination URL unchanged.
    let r = e
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
    // Every method.
    for m in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        let method = Method::from_bytes(m.as_bytes()).expect("method");
        let r = e
            .call(
                method,
                "/proxy/m",
                &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
                "x",
            )
            .await
            .expect(200);
        assert_eq!(r.echoed()["method"], json!(m));
    }
    // Missing or unknown proxy key.
    e.call(Method::GET, "/proxy", &[("svc-api-key", &key)], "")
        .await
        .proxy_error(401);
    e.call(
        Method::GET,
        "/proxy",
        &[("svc-proxy-key", "nope"), ("svc-api-key", &key)],
        "",
    )
    .await
    .proxy_error(401);
    // Other routes.
    let r = e.call(Method::GET, "/healthz", &[], "").await.expect(200);
    assert_eq!(r.body, json!({"status": "ok"}));
    e.call(Method::GET, "/readyz", &[], "").await.expect(200);
    let r = e.call(Method::GET, "/nope", &[], "").await.expect(404);
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/problem+json")
    );
}

/// Attack finding (issue 11, high): tenant B's API key with tenant A's proxy key ran A's
/// transforms with A's configuration and forwarded B's data. The caller's key must belong to the
/// proxy's tenant; otherwise the answer is exactly the unknown-key 401.
async fn another_tenants_key_is_refused_like_an_unknown_key(db: &TestDatabase) {
    let e = env(db).await;
    let (_, pkey) = e
        .proxy(json!({
            "name": "a's proxy",
            "destination_url": e.upstream_url(),
            "configuration": {"SECRET": "tenant-a-secret"},
            "request_transform": {"code": "module.exports = async (req) => ({ body: { secret: req.configuration.SECRET }, headers: req.args.headers });"},
        }))
        .await;
    let other = e.vault.create_tenant("other").await.expect("tenant b");
    let b_admin = e
        .vault
        .authenticate(Some(other.api_key.expose()))
        .await
        .expect("b admin");
    let b_key = e
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
    let before = e.upstream.hits();
    let ct = ("content-type", "application/json");
    for key in [b_key.as_str(), other.api_key.expose()] {
        let foreign = e
            .call(
                Method::POST,
                "/proxy",
                &[("svc-proxy-key", &pkey), ("svc-api-key", key), ct],
                "{}",
            )
            .await
            .proxy_error(401);
        let unknown = e
            .call(
                Method::POST,
                "/proxy",
                &[
                    ("svc-proxy-key", &pkey),
                    ("svc-api-key", "key_0123456789abcdefghijABCDEFGHIJ01"),
                    ct,
                ],
                "{}",
            )
            .await
            .proxy_error(401);
        assert_eq!(
            foreign.body, unknown.body,
            "no hint that the key is valid elsewhere"
        );
    }
    assert_eq!(e.upstream.hits(), before, "nothing reached the destination");
}

/// Attack finding (issue 11, high): `json: "$[?search(@.number, '^41')]"` answered 200 or 400
/// by whether the card matched, so a `token:use` key read a card in 45 requests. Regular
/// expressions are refused whatever the token; other predicates and filters that do not apply
/// render `null`, so the gateway's answer is the same and only the destination sees the value.
async fn answers_never_depend_on_token_content(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "p", "destination_url": e.upstream_url()}))
        .await;
    let card = e.token(json!({"number": "4111111111111111"}), None).await;
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
        ("content-type", "application/json"),
        ("x-echo-quiet", "1"),
    ];
    let call = |path: &str| {
        let body =
            json!({"probe": format!("{{{{ token: {card} | json: \"{path}\" }}}}")}).to_string();
        let e = &e;
        async move { e.call(Method::POST, "/proxy", &h, &body).await }
    };
    // The exact attack: refused at parse time, identically, whatever the card holds.
    let matching = call("$[?search(@.data.number, '^41')]")
        .await
        .proxy_error(400);
    let other = call("$[?search(@.data.number, '^55')]")
        .await
        .proxy_error(400);
    assert_eq!(matching.body, other.body);
    let m = call("$[?match(@.data.number, '4.*')]")
        .await
        .proxy_error(400);
    assert!(m.body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .contains("not allowed"));
    // A comparison selects or not; the caller sees the same answer either way.
    let hits = e.upstream.hits();
    let selected = call("$[?@.number < '5']").await.expect(200);
    let sent_selected = e.upstream.last_body();
    let unselected = call("$[?@.number < '3']").await.expect(200);
    let sent_unselected = e.upstream.last_body();
    assert_eq!(
        (selected.status, &selected.body),
        (unselected.status, &unselected.body)
    );
    assert_eq!(e.upstream.hits(), hits + 2, "both reached the destination");
    assert_eq!(
        sent_selected,
        json!({"probe": {"number": "4111111111111111"}}).to_string()
    );
    assert_eq!(sent_unselected, json!({"probe": null}).to_string());
    // Filters that do not apply to the value render null instead of failing.
    for expr in [
        format!("{{{{ {card} | last4 }}}}"),
        format!("{{{{ {card} | to_number }}}}"),
        format!("{{{{ {card} | json: '$.number' | to_boolean }}}}"),
        format!("{{{{ {card} | json: '$.missing' }}}}"),
    ] {
        let body = json!({"probe": expr}).to_string();
        let r = e.call(Method::POST, "/proxy", &h, &body).await.expect(200);
        assert_eq!(r.body, json!({"ok": true}));
        assert_eq!(
            e.upstream.last_body(),
            json!({"probe": null}).to_string(),
            "{expr}"
        );
    }
}

/// Attack finding (issue 11, finding 5): `/proxy/../../admin` reached the destination as
/// `/admin`, escaping the destination's path. Dot segments, raw or percent-encoded, are a 400
/// and nothing is sent.
async fn dot_segments_in_the_sub_path_are_refused(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "p", "destination_url": e.upstream_url()}))
        .await;
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
    ];
    let before = e.upstream.hits();
    for path in [
        "/proxy/../../admin",
        "/proxy/a/../../admin",
        "/proxy/./x",
        "/proxy/%2e%2e/%2E%2E/admin",
        "/proxy/.%2e/admin",
        "/proxy/%2e./admin",
        "/proxy/a/..%2f..%2fadmin",
        "/proxy/a/..%5c..%5cadmin",
        "/proxy/..",
    ] {
        let r = e.call(Method::GET, path, &h, "").await.proxy_error(400);
        assert!(
            r.body["proxy_error"]["detail"]
                .as_str()
                .expect("detail")
                .contains("dot segment"),
            "{path}: {}",
            r.body
        );
    }
    assert_eq!(e.upstream.hits(), before, "nothing was forwarded");
    // Dots inside names are fine.
    let r = e
        .call(Method::GET, "/proxy/v1.2/file..txt/.well-known", &h, "")
        .await
        .expect(200);
    assert_eq!(
        r.echoed()["path"],
        json!("/base/v1.2/file..txt/.well-known")
    );
}

/// Attack finding (issue 11, finding 6): `CustomHttpResponseError({status: 101, body})` wrote a
/// 1xx status with a body. Statuses outside 200–599 are a 500 proxy error.
async fn custom_responses_outside_final_statuses_fail(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    for status in [101, 100, 199, 600, 999] {
        let code = format!("module.exports = async () => {{ throw new CustomHttpResponseError({{ status: {status}, body: 'x' }}); }};");
        let (_, pkey) = e.proxy(json!({"name": "c", "destination_url": e.upstream_url(), "request_transform": {"code": code}})).await;
        let r = e
            .call(
                Method::POST,
                "/proxy",
                &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
                "",
            )
            .await
            .proxy_error(500);
        assert!(
            r.body["proxy_error"]["detail"]
                .as_str()
                .expect("detail")
                .contains("200 to 599"),
            "{status}"
        );
    }
    for status in [200, 599] {
        let code = format!("module.exports = async () => {{ throw new CustomHttpResponseError({{ status: {status}, body: 'x' }}); }};");
        let (_, pkey) = e.proxy(json!({"name": "c", "destination_url": e.upstream_url(), "request_transform": {"code": code}})).await;
        e.call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
            "",
        )
        .await
        .expect(status);
    }
}

async fn authentication_and_token_use(db: &TestDatabase) {
    let e = env(db).await;
    let (_, pkey) = e
        .proxy(json!({"name": "auth", "destination_url": e.upstream_url()}))
        .await;
    let general = e.token(json!("4242424242424242"), None).await;
    let secret = e.token(json!("top"), Some("/secret/")).await;
    let user = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let no_use = e
        .key(json!({"name": "reader", "type": "private", "permissions": ["token:read"]}))
        .await;
    let general_only = e
        .key(json!({"name": "scoped", "type": "private", "rules": [
        {"priority": 1, "container": "/general/", "permissions": ["token:use"]}]}))
        .await;
    let body = |id: &str| format!(r#"{{"card": "{{{{{id}}}}}"}}"#);
    let ct = ("content-type", "application/json");
    e.call(
        Method::POST,
        "/proxy",
        &[("svc-proxy-key", &pkey), ct],
        &body(&general),
    )
    .await
    .proxy_error(401);
    e.call(
        Method::POST,
        "/proxy",
        &[("svc-proxy-key", &pkey), ("svc-api-key", "key_bad"), ct],
        &body(&general),
    )
    .await
    .proxy_error(401);
    // token:use is needed even when nothing is detokenized.
    e.call(
        Method::POST,
        "/proxy",
        &[("svc-proxy-key", &pkey), ("svc-api-key", &no_use), ct],
        "{}",
    )
    .await
    .proxy_error(403);
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("svc-api-key", &general_only), ct],
            &body(&secret),
        )
        .await
        .proxy_error(403);
    assert!(r.body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .contains("token:use"));
    let before = e.upstream.hits();
    e.call(
        Method::POST,
        "/proxy",
        &[("svc-proxy-key", &pkey), ("svc-api-key", &general_only), ct],
        &body(&general),
    )
    .await
    .expect(200);
    assert_eq!(
        e.upstream.hits(),
        before + 1,
        "refused requests never reached the destination"
    );
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("svc-api-key", &user), ct],
            &body(&general),
        )
        .await
        .expect(200);
    assert_eq!(r.sent_json(), json!({"card": "4242424242424242"}));
}

async fn anonymous_proxies_forward_expressions_untouched(db: &TestDatabase) {
    let e = env(db).await;
    let (_, pkey) = e
        .proxy(
            json!({"name": "inbound", "destination_url": e.upstream_url(), "require_auth": false}),
        )
        .await;
    let token = e.token(json!("secret"), None).await;
    let body = format!(r#"{{"card": "{{{{{token}}}}}"}}"#);
    for headers in [
        vec![("svc-proxy-key", pkey.as_str())],
        vec![
            ("svc-proxy-key", pkey.as_str()),
            ("svc-api-key", "key_whatever"),
        ],
    ] {
        let mut h = headers.clone();
        h.push(("content-type", "application/json"));
        let r = e.call(Method::POST, "/proxy", &h, &body).await.expect(200);
        assert_eq!(
            r.echoed()["body"],
            json!(body),
            "expressions pass through; no data is revealed"
        );
    }
}

async fn json_substitution_is_injection_safe(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "json", "destination_url": e.upstream_url()}))
        .await;
    let string = e.token(json!("4242424242424242"), None).await;
    let number = e.token(json!(1234), None).await;
    let object = e
        .token(
            json!({"number": "4111111111111111", "exp": {"month": 12}}),
            None,
        )
        .await;
    let other = e.token(json!("never-expanded"), None).await;
    let tricky_value = format!("q\" b\\ close}} nl\n tab\t {{{{{other}}}}}");
    let tricky = e.token(json!(tricky_value), None).await;
    let body = json!({
        "s": format!("{{{{{string}}}}}"),
        "n": format!("{{{{ {number} }}}}"),
        "o": format!("{{{{{object}}}}}"),
        "path": format!("{{{{ token: {object} | json: '$.data.exp.month' }}}}"),
        "last4": format!("{{{{{string} | last4}}}}"),
        "inside": format!("card ending {{{{{string}|last4}}}} for {{{{{number}}}}}"),
        "tricky": format!("{{{{{tricky}}}}}"),
        "tricky_inside": format!("<{{{{{tricky}}}}}>"),
        "untouched": {"list": [1, "plain", null]},
    });
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[
                ("svc-proxy-key", &pkey),
                ("svc-api-key", &key),
                ("content-type", "application/json"),
            ],
            &body.to_string(),
        )
        .await
        .expect(200);
    let sent = r.sent_json();
    assert_eq!(sent["s"], json!("4242424242424242"));
    assert_eq!(
        sent["n"],
        json!(1234),
        "a whole-string expression takes the token's JSON type"
    );
    assert_eq!(
        sent["o"],
        json!({"number": "4111111111111111", "exp": {"month": 12}})
    );
    assert_eq!(sent["path"], json!(12));
    assert_eq!(sent["last4"], json!("4242"));
    assert_eq!(sent["inside"], json!("card ending 4242 for 1234"));
    assert_eq!(
        sent["tricky"],
        json!(tricky_value),
        "arrives literally, never re-expanded"
    );
    assert_eq!(sent["tricky_inside"], json!(format!("<{tricky_value}>")));
    assert_eq!(sent["untouched"], body["untouched"]);
    let upstream_headers = &r.echoed()["headers"];
    assert_eq!(
        upstream_headers["content-length"],
        json!(r.echoed()["body"].as_str().expect("body").len().to_string()),
        "Content-Length is recomputed"
    );
}

async fn form_text_and_header_substitution(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "forms", "destination_url": e.upstream_url()}))
        .await;
    let card = e.token(json!("4242 4242&x=1"), None).await;
    let bearer = e.token(json!("sk_live_abc"), None).await;
    let evil = e.token(json!("ok\r\nX-Injected: 1"), None).await;
    let auth = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
    ];
    let form = format!("number=%7B%7B{card}%7D%7D&amount=100");
    let mut h = auth.to_vec();
    h.push(("content-type", "application/x-www-form-urlencoded"));
    let r = e.call(Method::POST, "/proxy", &h, &form).await.expect(200);
    let sent = r.echoed()["body"].as_str().expect("body").to_string();
    let pairs: HashMap<String, String> = form_urlencoded::parse(sent.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(
        pairs["number"], "4242 4242&x=1",
        "percent-encoded, so & and = cannot add fields"
    );
    assert_eq!(pairs["amount"], "100");
    assert_eq!(pairs.len(), 2);
    let mut h = auth.to_vec();
    h.push(("content-type", "text/plain"));
    let r = e
        .call(Method::POST, "/proxy", &h, &format!("pan={{{{{card}}}}};"))
        .await
        .expect(200);
    assert_eq!(r.echoed()["body"], json!("pan=4242 4242&x=1;"));
    // Opaque bodies pass through untouched.
    let mut h = auth.to_vec();
    h.push(("content-type", "application/octet-stream"));
    let raw = format!("{{{{{card}}}}}");
    let r = e.call(Method::POST, "/proxy", &h, &raw).await.expect(200);
    assert_eq!(r.echoed()["body"], json!(raw));
    // Header values.
    let bearer_header = format!("Bearer {{{{{bearer}}}}}");
    let mut h = auth.to_vec();
    h.push(("authorization", &bearer_header));
    let r = e.call(Method::GET, "/proxy", &h, "").await.expect(200);
    assert_eq!(
        r.echoed()["headers"]["authorization"],
        json!("Bearer sk_live_abc")
    );
    // A value that would break the header line is percent-encoded, never refused: the
    // answer must not depend on a token's content (issue 11, findings 2 and 8).
    let evil_header = format!("{{{{{evil}}}}}");
    let mut h = auth.to_vec();
    h.push(("x-evil", &evil_header));
    let r = e.call(Method::GET, "/proxy", &h, "").await.expect(200);
    let seen = &r.echoed()["headers"];
    assert_eq!(seen["x-evil"], json!("ok%0D%0AX-Injected: 1"));
    assert!(seen.get("x-injected").is_none(), "no header was injected");
    // Non-ASCII data in a header: UTF-8 percent-encoded (RFC 8187 style), not raw bytes.
    let accented = e.token(json!("Zoë Ünal"), None).await;
    let accented_header = format!("{{{{{accented}}}}}");
    let mut h = auth.to_vec();
    h.push(("x-name", &accented_header));
    let r = e.call(Method::GET, "/proxy", &h, "").await.expect(200);
    assert_eq!(r.echoed()["headers"]["x-name"], json!("Zo%C3%AB %C3%9Cnal"));
}

async fn bad_expressions_unknown_and_foreign_tokens(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "p", "destination_url": e.upstream_url()}))
        .await;
    // A token of another tenant.
    let other = e.vault.create_tenant("other").await.expect("tenant");
    let other_admin = e
        .vault
        .authenticate(Some(other.api_key.expose()))
        .await
        .expect("admin");
    let foreign = e
        .vault
        .create_token(
            &other_admin,
            NewToken {
                token_type: TokenType::Token,
                data: Some(Secret::new(json!("theirs"))),
                metadata: None,
                containers: None,
            },
        )
        .await
        .expect("token")
        .id
        .to_string();
    let unknown = uuid::Uuid::new_v4().to_string();
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
        ("content-type", "application/json"),
    ];
    let before = e.upstream.hits();
    let r = e
        .call(Method::POST, "/proxy", &h, r#"{"a": "{{ not-a-token }}"}"#)
        .await
        .proxy_error(400);
    let detail = r.body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .to_string();
    assert!(
        detail.contains("byte") && detail.contains("body/a"),
        "{detail}"
    );
    e.call(Method::POST, "/proxy", &h, r#"{"a": "{{ unterminated"}"#)
        .await
        .proxy_error(400);
    let a = e
        .call(
            Method::POST,
            "/proxy",
            &h,
            &format!(r#"{{"a": "{{{{{unknown}}}}}"}}"#),
        )
        .await
        .proxy_error(400);
    let b = e
        .call(
            Method::POST,
            "/proxy",
            &h,
            &format!(r#"{{"a": "{{{{{foreign}}}}}"}}"#),
        )
        .await
        .proxy_error(400);
    let norm = |r: &Reply, id: &str| {
        r.body["proxy_error"]["detail"]
            .as_str()
            .expect("detail")
            .replace(id, "ID")
    };
    assert_eq!(
        norm(&a, &unknown),
        norm(&b, &foreign),
        "another tenant's token is answered like an unknown one"
    );
    assert!(!b.body.to_string().contains("theirs"));
    // 101 distinct tokens.
    let mut ids = Vec::new();
    for i in 0..101 {
        ids.push(e.token(json!(i), None).await);
    }
    let body = Value::Array(
        ids.iter()
            .map(|id| json!(format!("{{{{{id}}}}}")))
            .collect(),
    )
    .to_string();
    let r = e
        .call(Method::POST, "/proxy", &h, &body)
        .await
        .proxy_error(400);
    assert!(r.body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .contains("101"));
    assert_eq!(e.upstream.hits(), before, "nothing reached the destination");
    let body = Value::Array(
        ids[..100]
            .iter()
            .map(|id| json!(format!("{{{{{id}}}}}")))
            .collect(),
    )
    .to_string();
    let r = e.call(Method::POST, "/proxy", &h, &body).await.expect(200);
    assert_eq!(
        r.sent_json(),
        Value::Array((0..100).map(|i| json!(i)).collect())
    );
}

async fn destination_answers_pass_through(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "p", "destination_url": e.upstream_url()}))
        .await;
    let h = |extra: (&'static str, &'static str)| {
        vec![
            ("svc-proxy-key", pkey.clone()),
            ("svc-api-key", key.clone()),
            (extra.0, extra.1.to_string()),
        ]
    };
    for status in ["404", "422", "500", "503"] {
        let headers = h(("x-echo-status", status));
        let hs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = e.call(Method::POST, "/proxy", &hs, "x").await;
        assert_eq!(r.status.to_string(), status);
        assert!(
            r.body.get("proxy_error").is_none(),
            "destination errors are never wrapped"
        );
        assert_eq!(r.body["method"], json!("POST"));
        assert_eq!(
            r.headers
                .get("svc-proxy-destination-status")
                .and_then(|v| v.to_str().ok()),
            Some(status)
        );
    }
    let headers = h(("x-echo-request-id", "1"));
    let hs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = e.call(Method::GET, "/proxy", &hs, "").await.expect(200);
    assert_eq!(
        r.headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        Some("upstream-id"),
        "the destination's own id passes through"
    );
}

async fn ssrf_guard_and_unreachable_and_slow_destinations(db: &TestDatabase) {
    let strict = ClientConfig {
        allow_private_destinations: false,
        ..ClientConfig::default()
    };
    let e = env_with(db, strict, None, 1024 * 1024).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    for dest in [
        format!("https://localhost:{}/", e.upstream.addr.port()),
        format!("https://127.0.0.1:{}/", e.upstream.addr.port()),
    ] {
        let (_, pkey) = e
            .proxy(json!({"name": "internal", "destination_url": dest}))
            .await;
        let r = e
            .call(
                Method::GET,
                "/proxy",
                &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
                "",
            )
            .await
            .proxy_error(502);
        assert_eq!(
            r.body["proxy_error"]["detail"],
            json!("destination address not allowed")
        );
    }
    // Plain http is refused too (a proxy stored by a process that allowed it is not trusted).
    let (_, insecure) = e
        .proxy(json!({"name": "insecure", "destination_url": "http://api.example.com/"}))
        .await;
    let r = e
        .call(
            Method::GET,
            "/proxy",
            &[("svc-proxy-key", &insecure), ("svc-api-key", &key)],
            "",
        )
        .await
        .proxy_error(502);
    assert!(r.body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .contains("plain http"));
    assert_eq!(e.upstream.hits(), 0, "the upstream saw nothing");
    let text = e.metrics.render();
    assert!(
        text.contains(r#"tessera_gateway_errors_total{reason="blocked"} 3"#),
        "{text}"
    );
    drop(e);

    let quick = ClientConfig {
        allow_private_destinations: true,
        destination_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    };
    let e = env_with(db, quick, None, 1024 * 1024).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let (_, dead) = e
        .proxy(json!({"name": "dead", "destination_url": format!("http://127.0.0.1:{closed}/")}))
        .await;
    e.call(
        Method::GET,
        "/proxy",
        &[("svc-proxy-key", &dead), ("svc-api-key", &key)],
        "",
    )
    .await
    .proxy_error(502);
    let (_, slow) = e
        .proxy(json!({"name": "slow", "destination_url": e.upstream_url()}))
        .await;
    e.call(
        Method::GET,
        "/proxy",
        &[
            ("svc-proxy-key", &slow),
            ("svc-api-key", &key),
            ("x-echo-delay-ms", "2000"),
        ],
        "",
    )
    .await
    .proxy_error(504);
    e.call(
        Method::GET,
        "/proxy",
        &[("svc-proxy-key", &slow), ("svc-api-key", &key)],
        "",
    )
    .await
    .expect(200);
}

async fn tls_destination_with_private_ca(db: &TestDatabase) {
    let pki = TestPki::new();
    let mut ca = tempfile::NamedTempFile::new().expect("ca file");
    ca.write_all(pki.ca_pem.as_bytes()).expect("write ca");
    let config = ClientConfig {
        allow_private_destinations: true,
        extra_ca_file: Some(ca.path().to_path_buf()),
        ..ClientConfig::default()
    };
    let e = env_with(db, config, Some(&pki), 1024 * 1024).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let token = e.token(json!("4242424242424242"), None).await;
    let (_, pkey) = e.proxy(json!({"name": "tls", "destination_url": format!("https://localhost:{}/secure", e.upstream.addr.port())})).await;
    let r = e
        .call(
            Method::POST,
            "/proxy/x",
            &[
                ("svc-proxy-key", &pkey),
                ("svc-api-key", &key),
                ("content-type", "application/json"),
            ],
            &format!(r#"{{"n":"{{{{{token}}}}}"}}"#),
        )
        .await
        .expect(200);
    assert_eq!(r.sent_json(), json!({"n": "4242424242424242"}));
    assert_eq!(r.echoed()["path"], json!("/secure/x"));
    assert_eq!(
        r.echoed()["headers"]["host"],
        json!(format!("localhost:{}", e.upstream.addr.port()))
    );
    // Without the CA, the same destination is a TLS failure: 502.
    drop(e);
    let e = env_with(
        db,
        ClientConfig {
            allow_private_destinations: true,
            ..ClientConfig::default()
        },
        Some(&pki),
        1024 * 1024,
    )
    .await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e.proxy(json!({"name": "tls", "destination_url": format!("https://localhost:{}/", e.upstream.addr.port())})).await;
    e.call(
        Method::GET,
        "/proxy",
        &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
        "",
    )
    .await
    .proxy_error(502);
}

async fn limits_and_metrics(db: &TestDatabase) {
    let e = env_with(
        db,
        ClientConfig {
            allow_private_destinations: true,
            ..ClientConfig::default()
        },
        None,
        1024,
    )
    .await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, pkey) = e
        .proxy(json!({"name": "p", "destination_url": e.upstream_url()}))
        .await;
    let token = e.token(json!("v"), None).await;
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
        ("content-type", "application/json"),
    ];
    e.call(Method::POST, "/proxy", &h, &"x".repeat(2048))
        .await
        .proxy_error(413);
    e.call(
        Method::POST,
        "/proxy",
        &h,
        &format!(r#"["{{{{{token}}}}}"]"#),
    )
    .await
    .expect(200);
    let r = e.call(Method::GET, "/metrics", &[], "").await.expect(200);
    let text = r.body.as_str().expect("text").to_string();
    assert!(
        text.contains(r#"tessera_http_requests_total{class="2xx",component="gateway"} 1"#),
        "{text}"
    );
    assert!(text.contains(r#"tessera_http_requests_total{class="4xx",component="gateway"} 1"#));
    assert!(text.contains("tessera_tokens_detokenized_total 1"));
    assert!(
        text.contains(r#"tessera_gateway_errors_total{reason="too_large"} 1"#),
        "{text}"
    );
    assert!(text.contains("tessera_gateway_destination_seconds_count 1"));
    assert!(
        !text.contains(&token) && !text.contains(&pkey),
        "metrics never name tokens or keys"
    );
    assert_eq!(e.metrics.render(), e.metrics.render());
}

async fn deleted_tokens_and_proxies_stop_working_at_once(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (proxy_id, pkey) = e
        .proxy(json!({"name": "p", "destination_url": e.upstream_url()}))
        .await;
    let token = e.token(json!("v"), None).await;
    let h = [
        ("svc-proxy-key", pkey.as_str()),
        ("svc-api-key", key.as_str()),
        ("content-type", "application/json"),
    ];
    let body = format!(r#"["{{{{{token}}}}}"]"#);
    // Warm every cache: proxy key, API key and the token row.
    e.call(Method::POST, "/proxy", &h, &body).await.expect(200);
    e.vault
        .delete_token(&e.admin, token.parse().expect("id"))
        .await
        .expect("delete token");
    let r = e
        .call(Method::POST, "/proxy", &h, &body)
        .await
        .proxy_error(400);
    assert!(r.body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .contains("not found"));
    e.vault
        .delete_proxy(&e.admin, proxy_id.parse().expect("id"))
        .await
        .expect("delete proxy");
    e.call(Method::POST, "/proxy", &h, "[]")
        .await
        .proxy_error(401);
}

const ECHO_ARGS: &str = "module.exports = async function (req) {
  const { body, headers, method, path, query } = req.args;
  return {
    body: { seen: { body, method, path, query, ua: headers['user-agent'], key: headers['svc-api-key'] || null,
      proxyKey: headers['svc-proxy-key'] || null, cfg: req.configuration, svc: typeof req.svc } },
    headers: Object.assign({}, headers, { 'x-added': 'yes', 'x-remove-me': null, 'content-type': 'application/json' }),
  };
};";

async fn request_transform_sees_every_field_and_shapes_the_request(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let token = e.token(json!("4242424242424242"), None).await;
    let (_, pkey) = e
        .proxy(json!({"name": "t", "destination_url": e.upstream_url(), "configuration": {"MERCHANT": "m_1"},
            "request_transform": {"code": ECHO_ARGS}}))
        .await;
    let r = e
        .call(
            Method::PATCH,
            "/proxy/a/b?x=1&svc-proxy-key=hidden",
            &[
                ("svc-proxy-key", &pkey),
                ("svc-api-key", &key),
                ("content-type", "application/json"),
                ("user-agent", "UA/1"),
                ("x-remove-me", "gone"),
            ],
            &format!(r#"{{"card": "{{{{{token}}}}}"}}"#),
        )
        .await
        .expect(200);
    let sent = r.sent_json();
    assert_eq!(
        sent["seen"]["body"],
        json!({"card": "4242424242424242"}),
        "the transform sees the detokenized body"
    );
    assert_eq!(sent["seen"]["method"], json!("PATCH"));
    assert_eq!(sent["seen"]["path"], json!("/a/b"));
    assert_eq!(sent["seen"]["query"], json!("?x=1"), "never svc-proxy-key");
    assert_eq!(
        sent["seen"]["ua"],
        json!("UA/1"),
        "header names are lowercased"
    );
    assert_eq!(
        sent["seen"]["key"],
        Value::Null,
        "SVC-API-KEY is never shown"
    );
    assert_eq!(sent["seen"]["proxyKey"], Value::Null);
    assert_eq!(sent["seen"]["cfg"], json!({"MERCHANT": "m_1"}));
    assert_eq!(
        sent["seen"]["svc"],
        json!("undefined"),
        "no application: no req.svc"
    );
    let h = &r.echoed()["headers"];
    assert_eq!(h["x-added"], json!("yes"));
    assert!(
        h.get("x-remove-me").is_none(),
        "returned headers replace the set"
    );
    assert_eq!(
        h["content-length"],
        json!(r.echoed()["body"].as_str().expect("body").len().to_string())
    );
    // A string body is sent as it is; `/proxy` alone gives path "".
    let (_, skey) = e.proxy(json!({"name": "s", "destination_url": e.upstream_url(),
        "request_transform": {"code": "module.exports = async (req) => ({ body: 'raw:' + req.args.path + ':' + req.args.query, headers: req.args.headers });"}})).await;
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &skey), ("svc-api-key", &key)],
            "ignored",
        )
        .await
        .expect(200);
    assert_eq!(r.echoed()["body"], json!("raw::"));
    // A form body arrives as an object and is re-encoded as a form.
    let (_, fkey) = e.proxy(json!({"name": "f", "destination_url": e.upstream_url(),
        "request_transform": {"code": "module.exports = async (req) => { const b = req.args.body; b.extra = 'a b'; return { body: b, headers: req.args.headers }; };"}})).await;
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[
                ("svc-proxy-key", &fkey),
                ("svc-api-key", &key),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            "x=1",
        )
        .await
        .expect(200);
    assert_eq!(r.echoed()["body"], json!("x=1&extra=a+b"));
}

async fn response_transform_runs_on_2xx_only(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let code = "module.exports = async (req) => ({ body: { status: req.args.status, method: req.args.body.method, ct: req.args.headers['content-type'] }, headers: { 'x-shaped': '1', 'content-type': 'application/json' } });";
    let (_, pkey) = e.proxy(json!({"name": "r", "destination_url": e.upstream_url(), "response_transform": {"code": code}})).await;
    let r = e
        .call(
            Method::PUT,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
            "",
        )
        .await
        .expect(200);
    assert_eq!(
        r.body,
        json!({"status": 200, "method": "PUT", "ct": "application/json"})
    );
    assert_eq!(
        r.headers.get("x-shaped").and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(
        r.headers
            .get("svc-proxy-destination-status")
            .and_then(|v| v.to_str().ok()),
        Some("200")
    );
    let r = e
        .call(
            Method::PUT,
            "/proxy",
            &[
                ("svc-proxy-key", &pkey),
                ("svc-api-key", &key),
                ("x-echo-status", "404"),
            ],
            "",
        )
        .await
        .expect(404);
    assert_eq!(
        r.body["method"],
        json!("PUT"),
        "non-2xx responses pass through untouched"
    );
    assert!(r.headers.get("x-shaped").is_none());
}

async fn svc_tokenizes_as_the_proxy_application(db: &TestDatabase) {
    let e = env(db).await;
    let app: ApplicationInput =
        serde_json::from_value(json!({"name": "inbound", "type": "private",
        "permissions": ["token:create", "token:read"]}))
        .expect("input");
    let issued = e
        .vault
        .create_application(&e.admin, app)
        .await
        .expect("application");
    let code = "module.exports = async (req) => {
      const body = req.args.body;
      const token = await req.svc.tokenize({ type: 'card', data: { number: body.card_number } });
      const both = await req.svc.tokenize([{ type: 'token', data: 'a' }, { type: 'token', data: 'b' }]);
      let refused = null;
      try { await req.svc.tokens.delete(token.id); } catch (err) { refused = err.status; }
      const read = await req.svc.tokens.retrieve(token.id);
      delete body.card_number;
      body.card_token = token.id;
      body.many = both.length;
      body.refused = refused;
      body.last4 = read.data.number.slice(-4);
      return { body, headers: req.args.headers };
    };";
    let (_, pkey) = e.proxy(json!({"name": "inbound", "destination_url": e.upstream_url(), "require_auth": false,
        "application": {"id": issued.application.id.to_string()}, "response_transform": {"code": code}})).await;
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("x-echo-status", "201")],
            "",
        )
        .await;
    // The upstream echoes; reshape so the transform sees a card number in the response body.
    assert_eq!(
        r.status, 500,
        "the echo has no card_number: the tokenize call is refused as a 400 and rethrown: {}",
        r.body
    );
    let (_, pkey2) = e.proxy(json!({"name": "inbound2", "destination_url": e.upstream_url(), "require_auth": false,
        "application": {"id": issued.application.id.to_string()},
        "request_transform": {"code": "module.exports = async (req) => ({ body: { card_number: '4242424242424242' }, headers: { 'content-type': 'application/json' } });"},
        "response_transform": {"code": code.replace("req.args.body;", "JSON.parse(req.args.body.body);")}})).await;
    let r = e
        .call(Method::POST, "/proxy", &[("svc-proxy-key", &pkey2)], "")
        .await
        .expect(200);
    let b = &r.body;
    assert!(
        b.get("card_number").is_none(),
        "the card number never reaches the caller"
    );
    assert_eq!(
        (b["many"].clone(), b["refused"].clone(), b["last4"].clone()),
        (json!(2), json!(403), json!("4242"))
    );
    let id: tessera_domain::TokenId = b["card_token"]
        .as_str()
        .expect("token id")
        .parse()
        .expect("uuid");
    let reader = e
        .vault
        .authenticate(Some(issued.api_key.expose()))
        .await
        .expect("app key");
    let token = e
        .vault
        .get_token(&reader, id)
        .await
        .expect("readable with the application's key");
    assert_eq!(token.data.expose()["number"], json!("4242424242424242"));

    // The application loses `token:create`: the next invocation acts with the new permissions
    // at once (the cached principal is dropped by the update in this process).
    let narrowed: ApplicationInput = serde_json::from_value(
        json!({"name": "inbound", "type": "private", "permissions": ["token:read"]}),
    )
    .expect("input");
    e.vault
        .update_application(&e.admin, issued.application.id, narrowed)
        .await
        .expect("update");
    let r = e
        .call(Method::POST, "/proxy", &[("svc-proxy-key", &pkey2)], "")
        .await;
    assert_eq!(r.status, 500, "{}", r.body);
    let detail = r.body["proxy_error"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("token:create"), "{detail}");
}

async fn transform_errors_map_to_statuses(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    for (class, status) in [
        ("AuthenticationError", 401),
        ("AuthorizationError", 403),
        ("BadRequestError", 400),
        ("InvalidPaymentMethodError", 402),
        ("RateLimitError", 429),
        ("ServiceUnavailableError", 503),
    ] {
        let code =
            format!("module.exports = async () => {{ throw new {class}('card declined'); }};");
        let (_, pkey) = e.proxy(json!({"name": class, "destination_url": e.upstream_url(), "request_transform": {"code": code}})).await;
        let before = e.upstream.hits();
        let r = e
            .call(
                Method::POST,
                "/proxy",
                &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
                "",
            )
            .await
            .proxy_error(status);
        assert_eq!(r.body["proxy_error"]["title"], json!(class));
        assert_eq!(
            r.body["proxy_error"]["errors"],
            json!({"error": ["card declined"]})
        );
        assert_eq!(
            e.upstream.hits(),
            before,
            "a thrown request transform never reaches the destination"
        );
    }
    let custom = "module.exports = async () => { throw new CustomHttpResponseError({ status: 418, headers: { 'x-tea': 'pot' }, body: { brewed: false } }); };";
    let (_, pkey) = e.proxy(json!({"name": "custom", "destination_url": e.upstream_url(), "request_transform": {"code": custom}})).await;
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
            "",
        )
        .await
        .expect(418);
    assert_eq!(r.body, json!({"brewed": false}));
    assert_eq!(
        r.headers.get("x-tea").and_then(|v| v.to_str().ok()),
        Some("pot")
    );
    let crash = "module.exports = async () => { null.boom; };";
    let (_, pkey) = e.proxy(json!({"name": "crash", "destination_url": e.upstream_url(), "response_transform": {"code": crash}})).await;
    let r = e
        .call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
            "",
        )
        .await
        .proxy_error(500);
    let detail = r.body["proxy_error"]["detail"].as_str().expect("detail");
    assert!(detail.starts_with("transform failed"), "{detail}");
}

async fn abusive_transforms_are_contained(db: &TestDatabase) {
    let e = env(db).await;
    let key = e.key(serde_json::from_str(USE_ALL).expect("json")).await;
    let (_, good) = e
        .proxy(json!({"name": "good", "destination_url": e.upstream_url()}))
        .await;
    for code in [
        "module.exports = async () => { while (true) {} };",
        "module.exports = async () => { const f = () => f(); f(); };",
        "module.exports = async () => ({ body: 'x'.repeat(100 * 1024 * 1024) });",
        "module.exports = async () => new Promise(() => {});",
        "module.exports = async () => ({ body: eval('1') });",
        "module.exports = async () => ({ body: require('fs') });",
    ] {
        let (_, pkey) = e.proxy(json!({"name": "abuse", "destination_url": e.upstream_url(), "request_transform": {"code": code}})).await;
        e.call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("svc-api-key", &key)],
            "",
        )
        .await
        .proxy_error(500);
        e.call(
            Method::GET,
            "/proxy",
            &[("svc-proxy-key", &good), ("svc-api-key", &key)],
            "",
        )
        .await
        .expect(200);
    }
    // Globals and prototypes do not cross proxies.
    let (_, writer) = e.proxy(json!({"name": "w", "destination_url": e.upstream_url(), "request_transform": {"code":
        "module.exports = async (req) => { globalThis.stash = 'secret'; Object.prototype.evil = 1; return { body: 'w', headers: req.args.headers }; };"}})).await;
    let (_, reader) = e.proxy(json!({"name": "r", "destination_url": e.upstream_url(), "request_transform": {"code":
        "module.exports = async (req) => ({ body: typeof globalThis.stash + ',' + ({}).evil, headers: req.args.headers });"}})).await;
    for _ in 0..3 {
        e.call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &writer), ("svc-api-key", &key)],
            "",
        )
        .await
        .expect(200);
        let r = e
            .call(
                Method::POST,
                "/proxy",
                &[("svc-proxy-key", &reader), ("svc-api-key", &key)],
                "",
            )
            .await
            .expect(200);
        assert_eq!(r.echoed()["body"], json!("undefined,undefined"));
    }
}

async fn parallel_invocations_awaiting_svc(db: &TestDatabase) {
    let e = env(db).await;
    let app: ApplicationInput = serde_json::from_value(
        json!({"name": "p", "type": "private", "permissions": ["token:create"]}),
    )
    .expect("input");
    let issued = e
        .vault
        .create_application(&e.admin, app)
        .await
        .expect("application");
    let code = "module.exports = async (req) => { const t = await req.svc.tokenize({ type: 'token', data: req.args.query }); return { body: { id: t.id }, headers: { 'content-type': 'application/json' } }; };";
    let (_, pkey) = e.proxy(json!({"name": "par", "destination_url": e.upstream_url(), "require_auth": false,
        "application": {"id": issued.application.id.to_string()}, "request_transform": {"code": code}})).await;
    let e = Arc::new(e);
    let mut tasks = Vec::new();
    for i in 0..200 {
        let (e, pkey) = (e.clone(), pkey.clone());
        tasks.push(tokio::spawn(async move {
            e.call(
                Method::POST,
                &format!("/proxy?n={i}"),
                &[("svc-proxy-key", &pkey)],
                "",
            )
            .await
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let r = task.await.expect("task").expect(200);
        assert!(ids.insert(r.sent_json()["id"].as_str().expect("id").to_string()));
    }
    assert_eq!(ids.len(), 200);
}
