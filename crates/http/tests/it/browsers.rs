//! Calls from web pages (docs/api.md, "Browsers and CORS"): public applications list exact
//! origins; preflights are answered alike for every origin, so they tell nobody which origins
//! a tenant allows; a real answer is shared only with a listed origin of a public key (or the
//! hosted fields' origin); public keys have a rate limit of their own. The Chromium side is in
//! the console's browser tests.

use actix_web::{
    body::MessageBody,
    http::{header::HeaderMap, Method},
    test,
};
use serde_json::json;
use tessera_domain::{
    audit::{AuditAction, AuditFilter},
    origin::Origin,
    proxy::DestinationPolicy,
    PageRequest,
};
use tessera_http::browser::{Browsers, RateLimit, DEFAULT_PUBLIC_RATE_LIMIT};
use tessera_testkit::{
    api::{app_key, send_raw, state_with, Caller, Reply},
    backend_tests,
    db::TestDatabase,
};

use crate::caller::{with_tenant, ManagementApi, MIB};

backend_tests!(
    clients_are_counted_behind_trusted_proxies_and_by_ipv6_network,
    ipv4_clients_on_a_dual_stack_listener_are_counted_apart,
    a_public_create_spends_the_limit_per_token,
    allowed_origins_are_validated_returned_and_kept,
    preflights_answer_alike_for_every_origin,
    answers_are_shared_only_with_a_public_keys_listed_origins,
    public_keys_have_a_rate_limit_of_their_own,
);

const SHOP: &str = "https://shop.example";
const FIELDS: &str = "https://fields.vault.example";

fn browsers(limit: RateLimit) -> Browsers {
    Browsers::new(Some(Origin::parse(FIELDS).expect("origin")), limit)
}

/// The API as `api serve` runs it, with public keys limited to `limit`.
fn browser_state(db: &TestDatabase, limit: RateLimit) -> tessera_http::ApiState {
    state_with(db, MIB, DestinationPolicy::default()).with_browsers(browsers(limit))
}

/// A public application of the admin's tenant that lists [`SHOP`]: its key.
async fn shop_key<S, B>(app: &S, admin: &str) -> String
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    app_key(
        app,
        admin,
        json!({"name": "p", "type": "public", "permissions": ["token:create", "token:update"],
            "allowed_origins": [SHOP]}),
    )
    .await
}

fn cors_headers(headers: &HeaderMap) -> Vec<String> {
    headers
        .keys()
        .map(|k| k.as_str().to_string())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

/// `method path` from a page on `origin` with `key`, from client `peer`.
fn from_page(method: Method, path: &str, origin: &str, key: &str, peer: &str) -> test::TestRequest {
    let mut req = test::TestRequest::default()
        .method(method)
        .uri(path)
        .peer_addr(peer.parse().expect("peer"))
        .insert_header(("origin", origin))
        .insert_header(("svc-api-key", key));
    if path.starts_with("/tokens") || path == "/tokenize" {
        req = req.set_json(json!({"type": "token", "data": "x"}));
    }
    req
}

/// `POST /tokens` from a page on `origin` with `key`, from client `peer`.
async fn token_from_page<S, B>(app: &S, origin: &str, key: &str, peer: &str) -> Reply
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    send_raw(app, from_page(Method::POST, "/tokens", origin, key, peer)).await
}

fn allowed_origin(r: &Reply) -> Option<&str> {
    r.headers
        .get("access-control-allow-origin")
        .map(|v| v.to_str().expect("ascii"))
}

async fn allowed_origins_are_validated_returned_and_kept(db: &TestDatabase) {
    let (app, t) = with_tenant(state_with(db, MIB, DestinationPolicy::default())).await;
    let admin = Caller::new(&app, &t.admin_key);
    let bad = admin
        .post("/applications", json!({"name": "p", "type": "public", "permissions": ["token:create"],
            "allowed_origins": ["*", "https://shop.example/pay", "shop.example", "http://shop.example"]}))
        .await
        .expect(400);
    for i in 0..4 {
        assert!(
            bad.body["errors"][format!("allowed_origins[{i}]")].is_array(),
            "{}",
            bad.body
        );
    }
    let private_with_origins = json!({"name": "p", "type": "private",
        "permissions": ["token:read"], "allowed_origins": [SHOP]});
    admin
        .post("/applications", private_with_origins)
        .await
        .expect(400);
    let public = json!({"name": "p", "type": "public", "permissions": ["token:create"],
        "allowed_origins": ["https://SHOP.example:443", "http://localhost:3000"]});
    let created = admin.post("/applications", public).await.expect(201);
    let id = created.body["id"].as_str().expect("id").to_string();
    let path = format!("/applications/{id}");
    let read = admin.get(&path).await.expect(200);
    assert_eq!(
        read.body["allowed_origins"],
        json!([SHOP, "http://localhost:3000"])
    );
    // An update that leaves them out keeps them (clients that do not know the field);
    // one that names them replaces them; another type holds none.
    let kept = admin
        .put(
            &path,
            json!({"name": "renamed", "permissions": ["token:create"]}),
        )
        .await
        .expect(200);
    assert_eq!(kept.body["allowed_origins"], read.body["allowed_origins"]);
    let replaced = admin
        .put(
            &path,
            json!({"name": "p", "permissions": ["token:create"], "allowed_origins": [SHOP]}),
        )
        .await
        .expect(200);
    assert_eq!(replaced.body["allowed_origins"], json!([SHOP]));
    let private = json!({"name": "p", "type": "private", "permissions": ["token:read"]});
    let private = admin.put(&path, private).await.expect(200);
    assert!(
        private.body.get("allowed_origins").is_none(),
        "{}",
        private.body
    );
}

async fn preflights_answer_alike_for_every_origin(db: &TestDatabase) {
    let (app, t) = with_tenant(browser_state(db, DEFAULT_PUBLIC_RATE_LIMIT)).await;
    shop_key(&app, &t.admin_key).await;
    let preflight = |path: &str, origin: &str, method: &str| {
        test::TestRequest::default()
            .method(Method::OPTIONS)
            .uri(path)
            .insert_header(("origin", origin))
            .insert_header(("access-control-request-method", method))
            .insert_header((
                "access-control-request-headers",
                "content-type, svc-api-key",
            ))
    };
    let mut answers = Vec::new();
    for path in ["/tokens", "/tokenize"] {
        for origin in [SHOP, "https://anyone.example"] {
            let r = send_raw(&app, preflight(path, origin, "POST")).await;
            assert!(r.status.is_success(), "{path} {origin}: {}", r.status);
            assert_eq!(allowed_origin(&r), Some(origin), "echoed, never `*`");
            assert!(r.headers.get("access-control-allow-credentials").is_none());
            let mut shape: Vec<_> = cors_headers(&r.headers)
                .into_iter()
                .filter(|h| h != "access-control-allow-origin")
                .map(|h| {
                    // A list's order carries nothing: compare the set.
                    let value = r.headers.get(&h).map_or("", |v| v.to_str().expect("ascii"));
                    let mut items: Vec<_> = value.split(", ").map(str::to_string).collect();
                    items.sort();
                    (h, items)
                })
                .collect();
            shape.sort();
            answers.push(shape);
        }
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    // Other methods and endpoints get no CORS answer.
    for (path, method) in [
        ("/tokens", "GET"),
        ("/tokens", "DELETE"),
        ("/applications", "POST"),
        ("/detokenize", "POST"),
        ("/tokens/search", "POST"),
        ("/proxies", "POST"),
    ] {
        let r = send_raw(&app, preflight(path, SHOP, method)).await;
        assert!(
            r.headers.get("access-control-allow-origin").is_none(),
            "{method} {path}: {:?}",
            r.headers
        );
    }
}

async fn answers_are_shared_only_with_a_public_keys_listed_origins(db: &TestDatabase) {
    let st = browser_state(db, DEFAULT_PUBLIC_RATE_LIMIT);
    let vault = st.vault.clone();
    let (app, t) = with_tenant(st).await;
    let admin = t.admin_key.as_str();
    let public = shop_key(&app, admin).await;
    let peer = "198.51.100.7:5000";
    let listed = token_from_page(&app, SHOP, &public, peer).await;
    assert_eq!(listed.status, 201);
    assert_eq!(allowed_origin(&listed), Some(SHOP));
    assert!(listed
        .headers
        .get("access-control-allow-credentials")
        .is_none());
    let vary = listed
        .headers
        .get("vary")
        .expect("vary")
        .to_str()
        .expect("ascii");
    assert!(vary.contains("Origin"), "{vary}");
    let fields = send_raw(
        &app,
        from_page(Method::POST, "/tokenize", FIELDS, &public, peer),
    )
    .await;
    assert!(fields.status.is_success(), "{}", fields.status);
    assert_eq!(allowed_origin(&fields), Some(FIELDS), "the hosted fields");
    // Another origin with the public key: refused, and nothing is shared.
    let unlisted = token_from_page(&app, "https://evil.example", &public, peer).await;
    assert_eq!(unlisted.status, 403);
    assert!(cors_headers(&unlisted.headers).is_empty());
    // A private key is never shared with a page, whatever its origin.
    let private = token_from_page(&app, SHOP, admin, peer).await;
    assert_eq!(private.status, 201);
    assert!(
        cors_headers(&private.headers).is_empty(),
        "{:?}",
        private.headers
    );
    // Other endpoints share nothing, even with a listed origin of a public key.
    let id = listed.body["id"].as_str().expect("id");
    for (method, path) in [
        (Method::GET, format!("/tokens/{id}")),
        (Method::PATCH, format!("/tokens/{id}")),
        (Method::GET, "/tokens".to_string()),
    ] {
        let r = send_raw(&app, from_page(method.clone(), &path, SHOP, &public, peer)).await;
        assert!(cors_headers(&r.headers).is_empty(), "{method} {path}");
    }
    // The create is recorded with the page's origin.
    vault.audit().flush().await;
    let admin_principal = vault.authenticate(Some(admin)).await.expect("admin");
    let events = vault
        .list_audit_events(
            &admin_principal,
            &AuditFilter::default(),
            PageRequest::new(Some(1), Some(100)).expect("page"),
        )
        .await
        .expect("events");
    let created = events
        .items
        .iter()
        .find(|e| {
            e.event.action == AuditAction::TokenCreated
                && e.event.resource_ids.iter().any(|r| r.to_string() == id)
        })
        .expect("recorded");
    assert_eq!(created.event.origin.as_deref(), Some(SHOP));
}

async fn public_keys_have_a_rate_limit_of_their_own(db: &TestDatabase) {
    // Two at once, then one every 100 s: the test never sees a refill.
    let limit = RateLimit::new(0.01, 2.0).expect("limit");
    let (app, t) = with_tenant(browser_state(db, limit)).await;
    let admin = t.admin_key.as_str();
    let public = shop_key(&app, admin).await;
    let card_tester = "203.0.113.9:4000";
    for _ in 0..2 {
        let r = token_from_page(&app, SHOP, &public, card_tester).await;
        assert_eq!(r.status, 201);
    }
    let limited = token_from_page(&app, SHOP, &public, card_tester).await;
    assert_eq!(limited.status, 429);
    assert!(limited.headers.get("retry-after").is_some());
    assert_eq!(
        allowed_origin(&limited),
        Some(SHOP),
        "the page may read its 429"
    );
    // A page that may not use the key spends none of the limit: its 403 comes first.
    let elsewhere = token_from_page(&app, "https://evil.example", &public, "192.0.2.9:1").await;
    assert_eq!(elsewhere.status, 403);
    // Another client of the same page, and a private key, are not affected.
    let shopper = token_from_page(&app, SHOP, &public, "192.0.2.1:4000").await;
    assert_eq!(shopper.status, 201);
    for _ in 0..3 {
        let r = token_from_page(&app, SHOP, admin, card_tester).await;
        assert_eq!(r.status, 201);
    }
}

async fn clients_are_counted_behind_trusted_proxies_and_by_ipv6_network(db: &TestDatabase) {
    let limit = RateLimit::new(0.01, 1.0).expect("limit");
    let balancer: std::net::IpAddr = "10.0.0.2".parse().expect("ip");
    let st = state_with(db, MIB, DestinationPolicy::default())
        .with_browsers(browsers(limit).with_trusted_proxies(vec![balancer]));
    let (app, t) = with_tenant(st).await;
    let public = shop_key(&app, &t.admin_key).await;
    let through = |peer: &str, forwarded: &str| {
        from_page(Method::POST, "/tokens", SHOP, &public, peer)
            .insert_header(("x-forwarded-for", forwarded))
    };
    // Behind the balancer, each client has its own bucket.
    for client in ["198.51.100.1", "198.51.100.2"] {
        let r = send_raw(&app, through("10.0.0.2:1", &format!("{client}, 10.0.0.2"))).await;
        assert_eq!(r.status, 201, "{client}");
    }
    let again = send_raw(&app, through("10.0.0.2:1", "198.51.100.1")).await;
    assert_eq!(again.status, 429, "the same client behind the balancer");
    // A peer that is not a trusted proxy cannot name another client.
    let direct = "203.0.113.50:1";
    assert_eq!(
        send_raw(&app, through(direct, "198.51.100.77"))
            .await
            .status,
        201
    );
    assert_eq!(
        send_raw(&app, through(direct, "198.51.100.78"))
            .await
            .status,
        429
    );
    // Addresses of one IPv6 /64 share a bucket; another network does not.
    let v6 = |peer: &str| from_page(Method::POST, "/tokens", SHOP, &public, peer);
    assert_eq!(send_raw(&app, v6("[2001:db8:1:2::1]:1")).await.status, 201);
    assert_eq!(
        send_raw(&app, v6("[2001:db8:1:2::ffff]:1")).await.status,
        429
    );
    assert_eq!(send_raw(&app, v6("[2001:db8:1:3::1]:1")).await.status, 201);
}

/// A dual-stack listener (or balancer) reports IPv4 clients as IPv4-mapped IPv6 addresses
/// (`::ffff:a.b.c.d`): each is the IPv4 client it carries, not one shared `::/64`.
async fn ipv4_clients_on_a_dual_stack_listener_are_counted_apart(db: &TestDatabase) {
    let limit = RateLimit::new(0.01, 5.0).expect("limit");
    let balancer: std::net::IpAddr = "10.0.0.2".parse().expect("ip");
    let st = state_with(db, MIB, DestinationPolicy::default())
        .with_browsers(browsers(limit).with_trusted_proxies(vec![balancer]));
    let (app, t) = with_tenant(st).await;
    let public = shop_key(&app, &t.admin_key).await;
    let tester = "[::ffff:203.0.113.70]:4000";
    for _ in 0..5 {
        assert_eq!(
            token_from_page(&app, SHOP, &public, tester).await.status,
            201
        );
    }
    assert_eq!(
        token_from_page(&app, SHOP, &public, tester).await.status,
        429
    );
    for shopper in ["203.0.113.71", "198.51.100.5", "192.0.2.44"] {
        let peer = format!("[::ffff:{shopper}]:4000");
        let r = token_from_page(&app, SHOP, &public, &peer).await;
        assert_eq!(r.status, 201, "{shopper}'s first checkout");
    }
    // The same client arriving plain or mapped is one client.
    let plain = token_from_page(&app, SHOP, &public, "203.0.113.70:4000").await;
    assert_eq!(plain.status, 429);
    // A balancer reported mapped is still the trusted balancer, and mapped hops count alone.
    let through = |forwarded: &str| {
        from_page(
            Method::POST,
            "/tokens",
            SHOP,
            &public,
            "[::ffff:10.0.0.2]:1",
        )
        .insert_header(("x-forwarded-for", forwarded.to_string()))
    };
    for client in ["::ffff:198.51.100.61", "::ffff:198.51.100.62"] {
        assert_eq!(
            send_raw(&app, through(client)).await.status,
            201,
            "{client}"
        );
    }
}

/// `POST /tokenize` of `count` cards from a page on [`SHOP`] with `key`, from `peer`.
async fn cards_from_page<S, B>(app: &S, key: &str, peer: &str, count: usize) -> Reply
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let cards: Vec<_> = (0..count)
        .map(|_| json!({"type": "card", "data": {"number": "4242424242424242"}}))
        .collect();
    let req = from_page(Method::POST, "/tokenize", SHOP, key, peer).set_json(cards);
    send_raw(app, req).await
}

/// Card testing by bulk creates: a public key's limit counts the tokens a create makes, not
/// the requests. 20 calls of 100 cards from a listed page used to create 2,000 tokens.
async fn a_public_create_spends_the_limit_per_token(db: &TestDatabase) {
    // The default limit (50 at once): a call of 100 can never pass, and says why.
    let (app, t) = with_tenant(browser_state(db, DEFAULT_PUBLIC_RATE_LIMIT)).await;
    let admin = Caller::new(&app, &t.admin_key);
    let public = shop_key(&app, &t.admin_key).await;
    let tester = "203.0.113.9:4000";
    for _ in 0..20 {
        let r = cards_from_page(&app, &public, tester, 100).await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert!(
            r.body["detail"].as_str().is_some_and(|d| d.contains("50")),
            "{}",
            r.body
        );
    }
    let total = |body: &serde_json::Value| body["pagination"]["total_items"].clone();
    assert_eq!(total(&admin.get("/tokens").await.expect(200).body), 0);
    // A burst that holds two such calls: 20 × 100 from one client creates 200 tokens.
    let limit = RateLimit::new(0.01, 200.0).expect("limit");
    let (app, t) = with_tenant(browser_state(db, limit)).await;
    let admin = Caller::new(&app, &t.admin_key);
    let public = shop_key(&app, &t.admin_key).await;
    let mut statuses = Vec::new();
    for _ in 0..20 {
        statuses.push(
            cards_from_page(&app, &public, tester, 100)
                .await
                .status
                .as_u16(),
        );
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        2,
        "{statuses:?}"
    );
    assert!(statuses[2..].iter().all(|s| *s == 429), "{statuses:?}");
    let before = total(&admin.get("/tokens").await.expect(200).body);
    assert_eq!(before, 200);
    // Single creates spend one each, and another client has its own bucket.
    let single = token_from_page(&app, SHOP, &public, tester).await;
    assert_eq!(single.status, 429);
    let other = cards_from_page(&app, &public, "192.0.2.1:4000", 100).await;
    assert_eq!(other.status, 201);
    // A private key is not limited by the public keys' limit.
    let r = admin
        .post(
            "/tokenize",
            json!([{"type": "token", "data": "a"}, {"type": "token", "data": "b"}]),
        )
        .await;
    assert_eq!(r.status, 201);
}
