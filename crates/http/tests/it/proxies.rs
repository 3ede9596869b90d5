//! Proxy management (source §2.4, §4.5–4.6; SUPPLEMENT §5 first part) on both backends: the
//! response shape, every validation rule, permissions, tenant isolation, full-replacement
//! updates, encryption of the configuration at rest, key uniqueness, and the 409 on deleting an
//! application that proxies use.

use std::collections::HashSet;

use actix_web::{http::Method, test};
use serde_json::{json, Value};
use tessera_domain::{proxy::DestinationPolicy, store::ProxyStore, ProxyId};
use tessera_testkit::api::{app_key, send, state, state_with, tenant};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    create_get_list_update_delete,
    validation_rules,
    applications_are_checked_and_protected,
    permissions_are_required,
    tenants_are_isolated,
    configuration_is_encrypted_at_rest,
    keys_are_unique_across_1000_proxies,
    private_destinations_need_the_server_flag,
    transforms_must_compile,
);

const MIB: usize = 1024 * 1024;

fn minimal(name: &str) -> Value {
    json!({"name": name, "destination_url": "https://api.example.com/v1"})
}

async fn create_get_list_update_delete(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = Some(t.admin_key.as_str());
    let svc_app = send(
        &app,
        Method::POST,
        "/applications",
        k,
        Some(json!({"name": "svc", "type": "private", "permissions": ["token:create"]})),
    )
    .await
    .expect(201);
    let svc_id = svc_app.body["id"].as_str().expect("id").to_string();
    let full = json!({
        "name": "Stripe payments", "destination_url": "https://api.stripe.example/v1/charges",
        "request_transform": {"code": "module.exports = async function (req) { return req.args; };"},
        "response_transform": {"code": "module.exports = async (req) => req.args;"},
        "application": {"id": svc_id}, "configuration": {"STRIPE_KEY": "sk_test_123"}, "require_auth": false,
    });
    let created = send(&app, Method::POST, "/proxies", k, Some(full))
        .await
        .expect(201);
    let c = &created.body;
    let id = c["id"].as_str().expect("id").to_string();
    let key = c["key"].as_str().expect("key").to_string();
    assert_eq!(key.len(), 32);
    assert!(key.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert_eq!(c["tenant_id"], json!(t.tenant_id.to_string()));
    assert_eq!(
        c["application_id"],
        json!(svc_id),
        "flat application_id in responses"
    );
    assert!(c.get("application").is_none());
    assert_eq!(
        c["configuration"],
        json!({"STRIPE_KEY": "sk_test_123"}),
        "returned as stored"
    );
    assert_eq!(
        c["request_transform"]["code"],
        json!("module.exports = async function (req) { return req.args; };")
    );
    assert_eq!(c["require_auth"], json!(false));
    assert!(
        c.get("modified_by").is_none() && c.get("modified_at").is_none(),
        "not on the create response"
    );
    assert!(c["created_by"].is_string() && c["created_at"].is_string());

    let got = send(&app, Method::GET, &format!("/proxies/{id}"), k, None)
        .await
        .expect(200);
    assert_eq!(
        got.body["modified_at"], c["created_at"],
        "never modified: modified_* equal created_*"
    );
    assert_eq!(got.body["modified_by"], c["created_by"]);
    assert_eq!(got.body["key"], json!(key));
    assert_eq!(got.body["configuration"], c["configuration"]);

    let minimal_one = send(&app, Method::POST, "/proxies", k, Some(minimal("other")))
        .await
        .expect(201);
    assert_eq!(
        minimal_one.body["require_auth"],
        json!(true),
        "require_auth defaults to true"
    );
    for absent in [
        "request_transform",
        "response_transform",
        "application_id",
        "configuration",
    ] {
        assert!(
            minimal_one.body.get(absent).is_none(),
            "{absent} is omitted when unset"
        );
    }
    let list = send(&app, Method::GET, "/proxies", k, None)
        .await
        .expect(200);
    assert_eq!(list.body["pagination"]["total_items"], json!(2));
    assert_eq!(list.body["data"][0]["id"], json!(id), "oldest first");
    assert!(
        list.body["data"][0]["modified_at"].is_string(),
        "list items carry modified_*"
    );
    for (q, n) in [
        ("name=stripe", 1),
        ("name=STRIPE%20PAY", 1),
        ("name=s*e", 1),
        ("name=pay*nts", 1),
        ("name=*", 2),
        ("name=oth", 1),
        ("name=zzz", 0),
        ("name=%25", 0),
        ("name=_", 0),
    ] {
        let r = send(&app, Method::GET, &format!("/proxies?{q}"), k, None)
            .await
            .expect(200);
        assert_eq!(r.body["pagination"]["total_items"], json!(n), "{q}");
    }
    let other_id = minimal_one.body["id"].as_str().expect("id");
    let r = send(
        &app,
        Method::GET,
        &format!("/proxies?id={id}&id={other_id}&size=1&page=2"),
        k,
        None,
    )
    .await
    .expect(200);
    assert_eq!(
        r.body["pagination"],
        json!({"total_items": 2, "page_number": 2, "page_size": 1, "total_pages": 2})
    );
    let r = send(
        &app,
        Method::GET,
        &format!("/proxies?id={other_id}&name=stripe"),
        k,
        None,
    )
    .await
    .expect(200);
    assert_eq!(
        r.body["pagination"]["total_items"],
        json!(0),
        "filters AND together"
    );
    for bad in ["id=x", "page=0", "size=101", "color=red", "name=a&name=b"] {
        send(&app, Method::GET, &format!("/proxies?{bad}"), k, None)
            .await
            .expect(400);
    }

    // PUT is a full replacement: omitted optional fields go back to their defaults.
    let updated = send(
        &app,
        Method::PUT,
        &format!("/proxies/{id}"),
        k,
        Some(json!({"name": "renamed", "destination_url": "https://api.example.org/"})),
    )
    .await
    .expect(200);
    let u = &updated.body;
    assert_eq!(
        (&u["id"], &u["key"], &u["created_at"], &u["created_by"]),
        (&c["id"], &c["key"], &c["created_at"], &c["created_by"])
    );
    assert_eq!(u["name"], json!("renamed"));
    assert_eq!(u["require_auth"], json!(true));
    for absent in [
        "request_transform",
        "response_transform",
        "application_id",
        "configuration",
    ] {
        assert!(u.get(absent).is_none(), "{absent} returned to its default");
    }
    assert!(u["modified_at"].as_str() > c["created_at"].as_str());
    let got = send(&app, Method::GET, &format!("/proxies/{id}"), k, None)
        .await
        .expect(200);
    assert_eq!(got.body, updated.body);

    send(&app, Method::DELETE, &format!("/proxies/{id}"), k, None)
        .await
        .expect(204);
    send(&app, Method::GET, &format!("/proxies/{id}"), k, None)
        .await
        .expect(404);
    send(&app, Method::DELETE, &format!("/proxies/{id}"), k, None)
        .await
        .expect(404);
    send(
        &app,
        Method::PUT,
        &format!("/proxies/{id}"),
        k,
        Some(minimal("x")),
    )
    .await
    .expect(404);
    send(&app, Method::GET, "/proxies/not-a-uuid", k, None)
        .await
        .expect(400);
}

async fn validation_rules(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = Some(t.admin_key.as_str());
    let with = |patch: Value| {
        let mut body = minimal("p");
        for (key, value) in patch.as_object().expect("object") {
            body[key] = value.clone();
        }
        body
    };
    let big_config: serde_json::Map<String, Value> =
        (0..101).map(|i| (format!("K{i}"), json!("v"))).collect();
    let cases: Vec<(Value, &str)> = vec![
        (with(json!({"name": ""})), "name"),
        (with(json!({"name": "n".repeat(201)})), "name"),
        (json!({"destination_url": "https://a.example.com"}), "name"),
        (json!({"name": "p"}), "destination_url"),
        (
            with(json!({"destination_url": "http://api.example.com"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "ftp://api.example.com"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "/relative"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "https://127.0.0.1/"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "https://10.0.0.8/"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "https://169.254.169.254/latest"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "https://[::1]/"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "https://0.0.0.0/"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": "https://user:pw@api.example.com/"})),
            "destination_url",
        ),
        (
            with(json!({"destination_url": format!("https://a.example.com/{}", "x".repeat(400))})),
            "destination_url",
        ),
        (with(json!({"configuration": big_config})), "configuration"),
        (with(json!({"configuration": {"K": 1}})), "configuration.K"),
        (
            with(json!({"request_transform": {"code": "x".repeat(50_001)}})),
            "request_transform.code",
        ),
        (
            with(json!({"response_transform": {"code": 5}})),
            "response_transform.code",
        ),
        (
            with(json!({"request_transform": {"source": "x"}})),
            "request_transform.source",
        ),
        (
            with(json!({"application": {"id": "nope"}})),
            "application.id",
        ),
        (
            with(json!({"application": {"id": uuid::Uuid::new_v4().to_string()}})),
            "application.id",
        ),
        (with(json!({"key": "mine"})), "key"),
        (with(json!({"key": null})), "key"),
        (with(json!({"require_auth": "yes"})), "require_auth"),
        (with(json!({"surprise": 1})), "surprise"),
    ];
    for (body, field) in cases {
        let r = send(&app, Method::POST, "/proxies", k, Some(body.clone()))
            .await
            .expect(400);
        assert!(
            r.error_fields().iter().any(|f| f == field),
            "{body} should fail on {field}: {:?}",
            r.body
        );
    }
    // Boundaries that are fine.
    let ok = with(
        json!({"name": "n".repeat(200), "request_transform": {"code": "x".repeat(50_000)},
        "configuration": (0..100).map(|i| (format!("K{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()}),
    );
    send(&app, Method::POST, "/proxies", k, Some(ok))
        .await
        .expect(201);
    let list = send(&app, Method::GET, "/proxies", k, None)
        .await
        .expect(200);
    assert_eq!(
        list.body["pagination"]["total_items"],
        json!(1),
        "only the valid proxy was stored"
    );
    // Updates validate the same way and change nothing when refused.
    let id = list.body["data"][0]["id"].as_str().expect("id").to_string();
    send(
        &app,
        Method::PUT,
        &format!("/proxies/{id}"),
        k,
        Some(with(json!({"destination_url": "http://x.example.com"}))),
    )
    .await
    .expect(400);
    send(
        &app,
        Method::PUT,
        &format!("/proxies/{id}"),
        k,
        Some(with(json!({"key": "x"}))),
    )
    .await
    .expect(400);
    let got = send(&app, Method::GET, &format!("/proxies/{id}"), k, None)
        .await
        .expect(200);
    assert_eq!(got.body["name"], json!("n".repeat(200)));
}

async fn applications_are_checked_and_protected(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let ak = Some(a.admin_key.as_str());
    let mk = |name: &str, kind: &str, perms: Value| json!({"name": name, "type": kind, "permissions": perms});
    let id_of = |r: &tessera_testkit::api::Reply| r.body["id"].as_str().expect("id").to_string();
    let public = send(
        &app,
        Method::POST,
        "/applications",
        ak,
        Some(mk("pub", "public", json!(["token:create"]))),
    )
    .await
    .expect(201);
    let private = send(
        &app,
        Method::POST,
        "/applications",
        ak,
        Some(mk("priv", "private", json!(["token:read"]))),
    )
    .await
    .expect(201);
    let management = send(
        &app,
        Method::POST,
        "/applications",
        ak,
        Some(mk("mgmt", "management", json!(["proxy:read"]))),
    )
    .await
    .expect(201);
    let foreign = send(
        &app,
        Method::POST,
        "/applications",
        Some(&b.admin_key),
        Some(mk("b", "private", json!(["token:read"]))),
    )
    .await
    .expect(201);
    let with_app = |id: &str| json!({"name": "p", "destination_url": "https://api.example.com", "application": {"id": id}});
    let p1 = send(
        &app,
        Method::POST,
        "/proxies",
        ak,
        Some(with_app(&id_of(&public))),
    )
    .await
    .expect(201);
    send(
        &app,
        Method::POST,
        "/proxies",
        ak,
        Some(with_app(&id_of(&private))),
    )
    .await
    .expect(201);
    for refused in [id_of(&management), id_of(&foreign)] {
        let r = send(&app, Method::POST, "/proxies", ak, Some(with_app(&refused)))
            .await
            .expect(400);
        assert_eq!(r.error_fields(), vec!["application.id"]);
    }
    // A used application cannot become a management one either.
    let r = send(
        &app,
        Method::PUT,
        &format!("/applications/{}", id_of(&private)),
        ak,
        Some(mk("priv", "management", json!(["proxy:read"]))),
    )
    .await
    .expect(409);
    assert!(r.body["detail"]
        .as_str()
        .expect("detail")
        .contains("used by proxies"));
    // The public application is in use: deleting it is a conflict that names the proxy.
    let r = send(
        &app,
        Method::DELETE,
        &format!("/applications/{}", id_of(&public)),
        ak,
        None,
    )
    .await
    .expect(409);
    let detail = r.body["detail"].as_str().expect("detail");
    assert!(detail.contains(&id_of(&p1)), "{detail}");
    send(
        &app,
        Method::GET,
        &format!("/applications/{}", id_of(&public)),
        ak,
        None,
    )
    .await
    .expect(200);
    // Once the proxy no longer names it, the delete goes through.
    send(
        &app,
        Method::PUT,
        &format!("/proxies/{}", id_of(&p1)),
        ak,
        Some(minimal("p")),
    )
    .await
    .expect(200);
    send(
        &app,
        Method::DELETE,
        &format!("/applications/{}", id_of(&public)),
        ak,
        None,
    )
    .await
    .expect(204);
    // An unused application deletes as before.
    send(
        &app,
        Method::DELETE,
        &format!("/applications/{}", id_of(&management)),
        ak,
        None,
    )
    .await
    .expect(204);
}

async fn permissions_are_required(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    let p = send(
        &app,
        Method::POST,
        "/proxies",
        Some(admin),
        Some(minimal("p")),
    )
    .await
    .expect(201);
    let id = p.body["id"].as_str().expect("id").to_string();
    let all = ["proxy:create", "proxy:read", "proxy:update", "proxy:delete"];
    for missing in all {
        let perms: Vec<&str> = all.iter().copied().filter(|p| *p != missing).collect();
        let key = app_key(
            &app,
            admin,
            json!({"name": "m", "type": "management", "permissions": perms}),
        )
        .await;
        let k = Some(key.as_str());
        let (method, uri, body) = match missing {
            "proxy:create" => (Method::POST, "/proxies".to_string(), Some(minimal("new"))),
            "proxy:read" => (Method::GET, format!("/proxies/{id}"), None),
            "proxy:update" => (
                Method::PUT,
                format!("/proxies/{id}"),
                Some(minimal("changed")),
            ),
            _ => (Method::DELETE, format!("/proxies/{id}"), None),
        };
        send(&app, method, &uri, k, body).await.expect(403);
        if missing == "proxy:read" {
            send(&app, Method::GET, "/proxies", k, None)
                .await
                .expect(403);
        }
    }
    // A private (token) application holds no proxy permissions at all.
    let private = app_key(
        &app,
        admin,
        json!({"name": "t", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    send(&app, Method::GET, "/proxies", Some(&private), None)
        .await
        .expect(403);
    send(&app, Method::POST, "/proxies", None, Some(minimal("anon")))
        .await
        .expect(401);
    // Nothing changed.
    let list = send(&app, Method::GET, "/proxies", Some(admin), None)
        .await
        .expect(200);
    assert_eq!(list.body["pagination"]["total_items"], json!(1));
    assert_eq!(list.body["data"][0]["name"], json!("p"));
}

async fn tenants_are_isolated(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let p = send(
        &app,
        Method::POST,
        "/proxies",
        Some(&a.admin_key),
        Some(minimal("a's proxy")),
    )
    .await
    .expect(201);
    let id = p.body["id"].as_str().expect("id").to_string();
    let bk = Some(b.admin_key.as_str());
    send(&app, Method::GET, &format!("/proxies/{id}"), bk, None)
        .await
        .expect(404);
    send(
        &app,
        Method::PUT,
        &format!("/proxies/{id}"),
        bk,
        Some(minimal("stolen")),
    )
    .await
    .expect(404);
    send(&app, Method::DELETE, &format!("/proxies/{id}"), bk, None)
        .await
        .expect(404);
    let list = send(&app, Method::GET, &format!("/proxies?id={id}"), bk, None)
        .await
        .expect(200);
    assert_eq!(list.body["pagination"]["total_items"], json!(0));
    let list = send(&app, Method::GET, "/proxies?name=proxy", bk, None)
        .await
        .expect(200);
    assert_eq!(list.body["data"], json!([]));
    let got = send(
        &app,
        Method::GET,
        &format!("/proxies/{id}"),
        Some(&a.admin_key),
        None,
    )
    .await
    .expect(200);
    assert_eq!(got.body["name"], json!("a's proxy"));
}

/// Configuration, invocation key and transform code are sealed at rest: the database's own
/// files (SQLite file and WAL; PostgreSQL heap, index and TOAST files) never hold them.
async fn configuration_is_encrypted_at_rest(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let secret = "sk_live_PLAINTEXT_MARKER_42";
    let code = "module.exports = async (req) => ({ body: 'CODE_PLAINTEXT_MARKER' });";
    let body = json!({"name": "NAME_MARKER", "destination_url": "https://api.example.com",
        "configuration": {"API_KEY": secret}, "request_transform": {"code": code}});
    let r = send(
        &app,
        Method::POST,
        "/proxies",
        Some(&t.admin_key),
        Some(body),
    )
    .await
    .expect(201);
    let key = r.body["key"].as_str().expect("key").to_string();
    let id: ProxyId = r.body["id"].as_str().expect("id").parse().expect("uuid");
    let stored = db
        .db
        .get_proxy(t.tenant_id, id)
        .await
        .expect("get")
        .expect("row");
    let ciphertext = stored
        .configuration_ciphertext
        .expect("configuration stored");
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    assert!(!contains(&ciphertext, secret.as_bytes()));
    assert!(
        !contains(&ciphertext, b"API_KEY"),
        "names are encrypted too"
    );
    let all = db.stored_bytes().await;
    assert!(
        contains(&all, b"NAME_MARKER"),
        "sanity: the proxy row is on disk"
    );
    for plaintext in [secret, key.as_str(), "CODE_PLAINTEXT_MARKER"] {
        assert!(
            !contains(&all, plaintext.as_bytes()),
            "{plaintext} reached the disk"
        );
    }
    // The key still works, and the API returns it with the code.
    let got = send(
        &app,
        Method::GET,
        &format!("/proxies/{id}"),
        Some(&t.admin_key),
        None,
    )
    .await
    .expect(200);
    assert_eq!(got.body["key"], json!(key));
    assert_eq!(got.body["request_transform"]["code"], json!(code));
    assert_eq!(got.body["configuration"], json!({"API_KEY": secret}));
}

async fn keys_are_unique_across_1000_proxies(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let mut keys = HashSet::new();
    for i in 0..1000 {
        let r = send(
            &app,
            Method::POST,
            "/proxies",
            Some(&t.admin_key),
            Some(minimal(&format!("p{i}"))),
        )
        .await
        .expect(201);
        assert!(keys.insert(r.body["key"].as_str().expect("key").to_string()));
    }
    assert_eq!(keys.len(), 1000);
}

async fn private_destinations_need_the_server_flag(db: &TestDatabase) {
    let st = state_with(
        db,
        MIB,
        DestinationPolicy {
            allow_private_destinations: true,
        },
    );
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = Some(t.admin_key.as_str());
    for url in [
        "http://127.0.0.1:18081/",
        "https://10.0.0.8/",
        "http://localhost:9000/x",
    ] {
        let body = json!({"name": "internal", "destination_url": url});
        send(&app, Method::POST, "/proxies", k, Some(body))
            .await
            .expect(201);
    }
    let body = json!({"name": "bad", "destination_url": "ftp://127.0.0.1/"});
    send(&app, Method::POST, "/proxies", k, Some(body))
        .await
        .expect(400);
}

async fn transforms_must_compile(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = Some(t.admin_key.as_str());
    let broken = "module.exports = async (req) => {\n  const x = ;\n  return req.args;\n};";
    for field in ["request_transform", "response_transform"] {
        let mut body = minimal("p");
        body[field] = json!({"code": broken});
        let r = send(&app, Method::POST, "/proxies", k, Some(body))
            .await
            .expect(400);
        let key = format!("{field}.code");
        assert_eq!(r.error_fields(), vec![key.clone()]);
        let message = r.body["errors"][&key][0].as_str().expect("message");
        assert!(message.contains("line 2"), "{message}");
    }
    let ok = json!({"name": "p", "destination_url": "https://api.example.com",
        "request_transform": {"code": "module.exports = async (req) => req.args;"}});
    let created = send(&app, Method::POST, "/proxies", k, Some(ok))
        .await
        .expect(201);
    let id = created.body["id"].as_str().expect("id").to_string();
    let mut bad = minimal("p");
    bad["response_transform"] = json!({"code": broken});
    send(&app, Method::PUT, &format!("/proxies/{id}"), k, Some(bad))
        .await
        .expect(400);
    let got = send(&app, Method::GET, &format!("/proxies/{id}"), k, None)
        .await
        .expect(200);
    assert!(
        got.body.get("response_transform").is_none(),
        "a refused update changes nothing"
    );
}
