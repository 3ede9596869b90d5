//! A real gateway on a socket (served as `proxy-gateway` serves: a worker thread with its own
//! runtime), a vault with a tenant and its admin, and an [`Upstream`] that echoes what it
//! received; with helpers to create proxies, keys and tokens and to call `/proxy`.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use serde_json::{json, Value};
use tessera_domain::{
    proxy::DestinationPolicy, ApplicationInput, NewToken, Principal, ProxyInput, Secret, TokenType,
    Vault,
};
use tessera_gateway::{server, ClientConfig, Gateway, GatewayConfig, GatewayMetrics};
use tessera_service::metrics::{Registry, RequestCounter};
use tessera_transform_runtime::{EngineConfig, SandboxCommand, TransformEngine};

pub use tessera_transform_runtime::Isolation;

use crate::{
    db::TestDatabase,
    upstream::{TestPki, Upstream},
};

/// How a harness gateway is built.
#[derive(Debug, Clone)]
pub struct Options {
    /// Gateway settings; the client may reach loopback by default.
    pub config: GatewayConfig,
    /// Transform engine settings (short limits by default, so abuse tests are quick).
    pub engine: EngineConfig,
    /// Serve the upstream over TLS with this PKI.
    pub tls: Option<Arc<TestPki>>,
    /// Rate limit per proxy.
    pub rate_limit: Option<tessera_service::rate_limit::RateLimit>,
    /// Lifetime of the vault's caches (default 1 s).
    pub cache_ttl: Option<Duration>,
    /// Serving threads, each with its own listening socket (`SO_REUSEPORT`) and transform
    /// runtime (default 1).
    pub workers: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            config: GatewayConfig {
                client: ClientConfig {
                    allow_private_destinations: true,
                    ..ClientConfig::default()
                },
                ..GatewayConfig::default()
            },
            engine: EngineConfig {
                time_limit: Duration::from_millis(500),
                memory_limit: 16 * 1024 * 1024,
                ..EngineConfig::default()
            },
            tls: None,
            rate_limit: None,
            cache_ttl: None,
            workers: 1,
        }
    }
}

impl Options {
    /// These options with transforms run `isolation`-wise (process isolation runs
    /// [`sandbox_command`]).
    pub fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.engine.isolation = isolation;
        self.engine.sandbox = (isolation == Isolation::Process).then(sandbox_command);
        self
    }
}

/// The `tessera-transform-sandbox` executable cargo built next to the running test binary
/// (`target/<profile>/`). `cargo test --workspace` builds it; a test run of a single package
/// needs `cargo build -p tessera-transform-runtime --bins` first.
pub fn sandbox_command() -> SandboxCommand {
    let exe = std::env::current_exe().expect("the test executable");
    let name = format!("tessera-transform-sandbox{}", std::env::consts::EXE_SUFFIX);
    let found = exe
        .ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join(&name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} not found near {}: run `cargo build -p tessera-transform-runtime --bins`",
                exe.display()
            )
        });
    SandboxCommand {
        program: found,
        args: Vec::new(),
    }
}

/// A running gateway and what a test needs around it. Dropping it stops the gateway.
pub struct Harness {
    /// The vault the gateway reads (private destinations allowed).
    pub vault: Vault,
    /// The tenant's admin principal.
    pub admin: Principal,
    /// `http://127.0.0.1:PORT` of the gateway.
    pub base: String,
    /// The echo upstream.
    pub upstream: Upstream,
    /// The gateway's metrics.
    pub metrics: Arc<GatewayMetrics>,
    /// The process registry the gateway's metrics are in.
    pub registry: Registry,
    client: Client<HttpConnector, Full<Bytes>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// A response of the gateway, decoded.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body as JSON, or as a JSON string when it is not JSON.
    pub body: Value,
}

/// The key of an application holding `token:use` everywhere.
pub const USE_ALL: &str = r#"{"name": "user", "type": "private", "permissions": ["token:use"]}"#;

impl Harness {
    /// A gateway with the default [`Options`] over `db`, with a tenant `acme`.
    pub async fn start(db: &TestDatabase) -> Self {
        Self::start_with(db, Options::default()).await
    }

    /// A gateway running transforms `isolation`-wise over `db`, with a tenant `acme`.
    pub async fn start_in(db: &TestDatabase, isolation: Isolation) -> Self {
        Self::start_with(db, Options::default().with_isolation(isolation)).await
    }

    /// A gateway built with `options` over `db`, with a tenant `acme`.
    pub async fn start_with(db: &TestDatabase, options: Options) -> Self {
        let mut vault = crate::api::vault_with(
            db,
            DestinationPolicy {
                allow_private_destinations: true,
            },
        );
        if let Some(ttl) = options.cache_ttl {
            vault = vault.with_cache_ttl(ttl);
        }
        let tenant = vault.create_tenant("acme").await.expect("tenant");
        let admin = vault
            .authenticate(Some(tenant.api_key.expose()))
            .await
            .expect("admin");
        let registry = Registry::new();
        let gateway = build(&vault, &options, &registry);
        let metrics = gateway.metrics().clone();
        let (base, stop) = serve_workers(gateway, registry.clone(), options.workers);
        let upstream = Upstream::start(options.tls.as_deref()).await;
        Self {
            vault,
            admin,
            base,
            upstream,
            metrics,
            registry,
            client: Client::builder(TokioExecutor::new()).build_http(),
            stop,
        }
    }

    /// `http://127.0.0.1:PORT/base` of the upstream (plain HTTP).
    pub fn upstream_url(&self) -> String {
        format!("http://127.0.0.1:{}/base", self.upstream.addr.port())
    }

    /// Creates a proxy from `spec` (the API's JSON) as the admin: `(id, key)`.
    pub async fn proxy(&self, spec: Value) -> (String, String) {
        let input: ProxyInput = serde_json::from_value(spec).expect("proxy input");
        let p = self
            .vault
            .create_proxy(&self.admin, input)
            .await
            .expect("create proxy");
        (p.id.to_string(), p.key.expose().clone())
    }

    /// A proxy to the upstream with no transform: its key.
    pub async fn plain_proxy(&self) -> String {
        self.proxy(json!({"name": "p", "destination_url": self.upstream_url()}))
            .await
            .1
    }

    /// Creates an application from `spec` as the admin: its key.
    pub async fn key(&self, spec: Value) -> String {
        application_key(&self.vault, &self.admin, spec).await
    }

    /// The key of an application holding `token:use` everywhere.
    pub async fn use_key(&self) -> String {
        self.key(serde_json::from_str(USE_ALL).expect("json")).await
    }

    /// Creates a `token` token holding `data` (in `container`, else the default): its id.
    pub async fn token(&self, data: Value, container: Option<&str>) -> String {
        self.bound_token(data, container, None).await
    }

    /// As [`Harness::token`], bound to `destinations` when given.
    pub async fn bound_token(
        &self,
        data: Value,
        container: Option<&str>,
        destinations: Option<&[&str]>,
    ) -> String {
        let t = NewToken {
            id: None,
            token_type: TokenType::Token,
            data: Some(Secret::new(data)),
            metadata: None,
            containers: container.map(|c| vec![c.to_string()]),
            expires_at: None,
            deduplicate_token: false,
            destinations: destinations.map(|d| d.iter().map(|p| p.to_string()).collect()),
            search_indexes: None,
            fingerprint_expression: None,
            mask: None,
        };
        self.create_token(t).await
    }

    /// Creates the token `input` as the tenant's admin: its id.
    pub async fn create_token(&self, input: NewToken) -> String {
        self.vault
            .create_token(&self.admin, input)
            .await
            .expect("token")
            .id
            .to_string()
    }

    /// [`Harness::call`] through the proxy `proxy_key` with the API key `api_key`, then
    /// `headers`: the two keys most proxied calls send first.
    pub async fn call_keyed(
        &self,
        method: Method,
        path: &str,
        (proxy_key, api_key): (&str, &str),
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let mut all = vec![("svc-proxy-key", proxy_key), ("svc-api-key", api_key)];
        all.extend_from_slice(headers);
        self.call(method, path, &all, body).await
    }

    /// Sends `method path` with `headers` and `body` to the gateway.
    pub async fn call(
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

    /// `method path` with no body, the proxy key and the API key: the plain call through a
    /// proxy.
    pub async fn keyed(&self, method: Method, path: &str, proxy_key: &str, api_key: &str) -> Reply {
        let headers = [("svc-proxy-key", proxy_key), ("svc-api-key", api_key)];
        self.call(method, path, &headers, "").await
    }

    /// `POST /proxy` with a JSON `body`, the proxy key and (when given) an API key.
    pub async fn post_json(&self, proxy_key: &str, api_key: Option<&str>, body: &str) -> Reply {
        let mut headers = vec![
            ("svc-proxy-key", proxy_key),
            ("content-type", "application/json"),
        ];
        if let Some(k) = api_key {
            headers.push(("svc-api-key", k));
        }
        self.call(Method::POST, "/proxy", &headers, body).await
    }
}

/// Creates an application from `spec` (the API's JSON) in `vault` as `admin`: its key.
pub async fn application_key(vault: &Vault, admin: &Principal, spec: Value) -> String {
    let input: ApplicationInput = serde_json::from_value(spec).expect("application input");
    vault
        .create_application(admin, input)
        .await
        .expect("application")
        .api_key
        .expose()
        .to_string()
}

/// A gateway over `vault` built with `options`, its metrics in `registry` (for mounting in the
/// management app, or for calling [`Gateway::handle`] directly).
pub fn build(vault: &Vault, options: &Options, registry: &Registry) -> Gateway {
    let requests = Arc::new(RequestCounter::new());
    registry.register(requests.clone());
    let engine = TransformEngine::new(options.engine.clone()).expect("transform engine");
    let mut gateway = Gateway::new(vault.clone(), options.config.clone(), registry, requests)
        .expect("gateway")
        .with_transforms(engine);
    if let Some(limit) = options.rate_limit {
        gateway = gateway.with_rate_limit(limit);
    }
    gateway
}

/// A request for [`Gateway::handle`]: `method uri`, `headers` and a buffered `body`.
pub fn request(
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<tessera_service::mount::LocalBody> {
    let mut builder = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let body = Full::new(Bytes::from(body.to_string()))
        .map_err(|e| -> tessera_service::mount::BoxError { match e {} });
    builder
        .body(Box::pin(body) as tessera_service::mount::LocalBody)
        .expect("request")
}

/// Serves `gateway` on a fresh port from a worker thread, as `proxy-gateway` does: its base URL
/// and the switch that stops it.
pub fn serve(gateway: Gateway, registry: Registry) -> (String, tokio::sync::watch::Sender<bool>) {
    serve_workers(gateway, registry, 1)
}

/// Like [`serve`], with `workers` serving threads on one port.
pub fn serve_workers(
    gateway: Gateway,
    registry: Registry,
    workers: usize,
) -> (String, tokio::sync::watch::Sender<bool>) {
    let listeners = server::bind("127.0.0.1:0".parse().expect("addr"), workers).expect("bind");
    let addr = listeners[0].local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    std::thread::spawn(move || {
        let _ = server::serve_per_core(listeners, &gateway, server::Served { registry }, stopped);
    });
    (format!("http://{addr}"), stop)
}

impl Reply {
    /// Asserts the status (printing the body otherwise).
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(self.status, status, "body: {}", self.body);
        self
    }

    /// Asserts a proxy error: `{"proxy_error": problem}` with JSON content type, the status,
    /// and no sign of the destination.
    pub fn proxy_error(self, status: u16) -> Self {
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

    /// The `proxy_error`'s detail.
    pub fn detail(&self) -> &str {
        self.body["proxy_error"]["detail"].as_str().unwrap_or("")
    }

    /// What the upstream saw (the echo).
    pub fn echoed(&self) -> &Value {
        &self.body
    }

    /// The JSON body the upstream received.
    pub fn sent_json(&self) -> Value {
        serde_json::from_str(self.body["body"].as_str().expect("echoed body"))
            .expect("upstream received JSON")
    }

    /// A response header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}
