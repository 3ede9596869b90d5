//! What the console's tests share: a console over a testkit gateway harness (a real gateway on
//! a socket, an echo upstream, tenant `acme` and its admin), served either in-process
//! (actix's test service, for HTTP-level tests) or on a socket (for the browser), and a
//! client that keeps the console's cookies.

use std::{collections::BTreeMap, time::Duration};

use actix_web::{
    body::MessageBody,
    cookie::Cookie,
    dev::{Service, ServiceResponse},
    http::{header, Method, StatusCode},
    test, App, Error,
};
use serde_json::{json, Value};
use tessera_console::{Console, ConsoleConfig, MAX_SESSION_AGE, SESSION_COOKIE, SIGN_IN_COOKIE};
use tessera_domain::{
    audit::{AuditAction, AuditFilter, ChainedEvent},
    NewToken, PageRequest, Principal, ProxyInput, TokenType, Vault,
};
use tessera_testkit::{
    db::TestDatabase,
    gateway::{application_key, Harness},
};

/// A card number every test that needs one uses; no page may show it before Reveal.
pub(crate) const CARD: &str = "4111111111111111";

/// The console over a harness, for a tenant `console` of the harness's vault.
pub(crate) struct Setup {
    pub(crate) harness: Harness,
    pub(crate) console: Console,
    /// The tenant's bootstrap admin (every permission).
    pub(crate) admin: Principal,
    /// Its key.
    pub(crate) admin_key: String,
}

impl Setup {
    /// With sessions idling out after `idle`.
    pub(crate) async fn start(db: &TestDatabase, idle: Duration) -> Self {
        let harness = Harness::start(db).await;
        let (admin, admin_key) = other_tenant(&harness.vault, "console").await;
        let console = Console::new(
            harness.vault.clone(),
            ConsoleConfig {
                session_idle: idle,
                session_max_age: MAX_SESSION_AGE,
                gateway_url: Some(harness.base.clone()),
                max_body_bytes: 1024 * 1024,
                trusted_proxies: vec![],
            },
        );
        Self {
            harness,
            console,
            admin,
            admin_key,
        }
    }

    /// Another `api` process over the same database: its own vault and console (sessions idle
    /// out after a minute), as a second replica behind a load balancer.
    pub(crate) fn replica(&self, db: &TestDatabase) -> Console {
        let vault = tessera_testkit::api::vault_with(
            db,
            tessera_domain::proxy::DestinationPolicy {
                allow_private_destinations: true,
            },
        );
        Console::new(
            vault,
            ConsoleConfig {
                session_idle: Duration::from_secs(60),
                session_max_age: MAX_SESSION_AGE,
                gateway_url: Some(self.harness.base.clone()),
                max_body_bytes: 1024 * 1024,
                trusted_proxies: vec![],
            },
        )
    }

    /// The vault.
    pub(crate) fn vault(&self) -> &Vault {
        &self.harness.vault
    }

    /// An application of the tenant from the API's JSON `spec`: its key.
    pub(crate) async fn key(&self, spec: Value) -> String {
        application_key(self.vault(), &self.admin, spec).await
    }

    /// A proxy of the tenant from the API's JSON `spec`: its id and key.
    pub(crate) async fn proxy(&self, spec: Value) -> (String, String) {
        let input: ProxyInput = serde_json::from_value(spec).expect("input");
        let p = self
            .vault()
            .create_proxy(&self.admin, input)
            .await
            .expect("proxy");
        (p.id.to_string(), p.key.expose().clone())
    }

    /// A card token in the tenant, with metadata `{"customer": "c_1"}`: its id.
    pub(crate) async fn card(&self) -> String {
        let mut input = NewToken::new(
            TokenType::Card,
            json!({"number": CARD, "expiration_month": 12, "expiration_year": 2031, "cvc": "737"}),
        );
        input.metadata = Some([("customer".to_string(), "c_1".to_string())].into());
        self.vault()
            .create_token(&self.admin, input)
            .await
            .expect("card")
            .id
            .to_string()
    }

    /// The tenant's audit events, newest first (read as the admin).
    pub(crate) async fn events(&self) -> Vec<ChainedEvent> {
        self.vault()
            .list_audit_events(
                &self.admin,
                &AuditFilter::default(),
                PageRequest::new(Some(1), Some(100)).expect("page"),
            )
            .await
            .expect("events")
            .items
    }

    /// How many `token.read` events the tenant's audit trail holds.
    pub(crate) async fn token_reads(&self) -> usize {
        self.events()
            .await
            .iter()
            .filter(|e| e.event.action == AuditAction::TokenRead)
            .count()
    }
}

/// Creates a second tenant on the same vault: its admin principal and key.
pub(crate) async fn other_tenant(vault: &Vault, name: &str) -> (Principal, String) {
    let created = vault.create_tenant(name).await.expect("tenant");
    let key = created.api_key.expose().to_string();
    let principal = vault.authenticate(Some(&key)).await.expect("admin");
    (principal, key)
}

/// An answer, read whole.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) headers: header::HeaderMap,
    pub(crate) body: String,
}

impl Page {
    /// The `Location` of a redirect.
    pub(crate) fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The value of the hidden `csrf` field of the page's first form.
    pub(crate) fn csrf(&self) -> String {
        let marker = "name=\"csrf\" value=\"";
        let start = self.body.find(marker).expect("a CSRF field") + marker.len();
        let end = self.body[start..].find('"').expect("end of value") + start;
        self.body[start..end].to_string()
    }

    /// The `Set-Cookie` headers, parsed.
    pub(crate) fn set_cookies(&self) -> Vec<Cookie<'static>> {
        self.headers
            .get_all(header::SET_COOKIE)
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| Cookie::parse(v.to_string()).ok())
            .collect()
    }
}

/// A browser stand-in for the in-process console: keeps cookies, follows nothing.
pub(crate) struct Client<S> {
    app: S,
    pub(crate) cookies: BTreeMap<String, String>,
    /// Extra headers sent with every request.
    pub(crate) headers: Vec<(String, String)>,
    /// The connection's peer address (whose failed sign-ins are counted).
    pub(crate) peer: std::net::SocketAddr,
}

/// The console in-process, with a client.
pub(crate) async fn client(
    setup: &Setup,
) -> Client<
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
> {
    client_of(&setup.console).await
}

/// A client of `console` in-process.
pub(crate) async fn client_of(
    console: &Console,
) -> Client<
    impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = Error>,
> {
    let console = console.clone();
    let app = test::init_service(App::new().configure(move |cfg| console.configure(cfg))).await;
    Client {
        app,
        cookies: BTreeMap::new(),
        headers: Vec::new(),
        peer: std::net::SocketAddr::from(([127, 0, 0, 1], 40000)),
    }
}

impl<S, B> Client<S>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    /// Sends a request with the kept cookies; keeps what it sets.
    pub(crate) async fn send(
        &mut self,
        method: Method,
        uri: &str,
        form: Option<&[(&str, &str)]>,
    ) -> Page {
        let mut req = test::TestRequest::default()
            .method(method)
            .uri(uri)
            .peer_addr(self.peer);
        for (k, v) in &self.headers {
            req = req.insert_header((k.as_str(), v.as_str()));
        }
        for (name, value) in &self.cookies {
            req = req.cookie(Cookie::new(name.clone(), value.clone()));
        }
        if let Some(form) = form {
            let body = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form.iter())
                .finish();
            req = req
                .insert_header((header::CONTENT_TYPE, "application/x-www-form-urlencoded"))
                .set_payload(body);
        }
        let res = test::call_service(&self.app, req.to_request()).await;
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = test::read_body(res).await;
        let page = Page {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        };
        for c in page.set_cookies() {
            if c.max_age() == Some(actix_web::cookie::time::Duration::ZERO) {
                self.cookies.remove(c.name());
            } else {
                self.cookies
                    .insert(c.name().to_string(), c.value().to_string());
            }
        }
        page
    }

    /// `GET uri`.
    pub(crate) async fn get(&mut self, uri: &str) -> Page {
        self.send(Method::GET, uri, None).await
    }

    /// `POST uri` with `form`.
    pub(crate) async fn post(&mut self, uri: &str, form: &[(&str, &str)]) -> Page {
        self.send(Method::POST, uri, Some(form)).await
    }

    /// Signs in with `key`: the answer to the POST.
    pub(crate) async fn sign_in(&mut self, key: &str) -> Page {
        let form = self.get("/console").await;
        let csrf = form.csrf();
        self.post("/console/sign-in", &[("csrf", &csrf), ("api_key", key)])
            .await
    }

    /// Signs in with `key`, expecting success; returns the session's CSRF token.
    pub(crate) async fn signed_in(&mut self, key: &str) -> String {
        let res = self.sign_in(key).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
        assert_eq!(res.location(), "/console/tokens");
        assert!(self.cookies.contains_key(SESSION_COOKIE));
        assert!(!self.cookies.contains_key(SIGN_IN_COOKIE));
        let page = self.get("/console/tokens").await;
        // 403: a key that may not read tokens (the page still has the sign-out form).
        assert!(
            matches!(page.status, StatusCode::OK | StatusCode::FORBIDDEN),
            "{}",
            page.body
        );
        page.csrf()
    }
}

/// An application `checkout` of the console's tenant and a token it created: its principal
/// and the token's id.
pub(crate) async fn written_by_checkout(s: &Setup) -> (Principal, tessera_domain::TokenId) {
    let writer_key = s
        .key(json!({"name": "checkout", "type": "private", "permissions": ["token:create", "token:read"]}))
        .await;
    let writer = s
        .vault()
        .authenticate(Some(&writer_key))
        .await
        .expect("writer");
    let token = s
        .vault()
        .create_token(&writer, NewToken::new(TokenType::Token, json!("x")))
        .await
        .expect("token");
    (writer, token.id)
}
