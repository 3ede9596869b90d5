//! Proxy management (docs/api.md, "Proxies" first part) on both backends: the
//! response shape, every validation rule, permissions, tenant isolation, full-replacement
//! updates, encryption of the configuration at rest, key uniqueness, and the 409 on deleting an
//! application that proxies use.

use std::collections::HashSet;

use actix_web::{body::MessageBody, http::Method};
use serde_json::{json, Value};
use tessera_domain::{proxy::DestinationPolicy, store::ProxyStore, ProxyId};
use tessera_testkit::api::{state_with, tenant};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{id_of, one_tenant, serve, total, two_tenants, Caller, ManagementApi, MIB};

backend_tests!(
    a_created_proxy_carries_its_key_owner_and_configuration,
    a_minimal_proxy_requires_auth_and_omits_what_is_unset,
    lists_are_oldest_first_and_filter_by_name_and_id,
    put_replaces_the_whole_proxy,
    deleted_proxies_are_gone,
    refused_proxies_name_the_field_and_are_not_stored,
    boundaries_are_accepted_and_refused_updates_change_nothing,
    proxies_take_only_their_tenants_token_applications,
    an_application_proxies_use_cannot_become_management,
    an_application_proxies_use_is_deleted_only_once_unused,
    permissions_are_required,
    tenants_are_isolated,
    configuration_is_encrypted_at_rest,
    keys_are_unique_across_1000_proxies,
    private_destinations_need_the_server_flag,
    transforms_must_compile,
);

const REQUEST_CODE: &str = "module.exports = async function (req) { return req.args; };";

/// The optional fields a proxy leaves out of its answers when they are unset.
const OPTIONAL: [&str; 4] = [
    "request_transform",
    "response_transform",
    "application_id",
    "configuration",
];

fn minimal(name: &str) -> Value {
    json!({"name": name, "destination_url": "https://api.example.com/v1"})
}

/// `minimal("p")` with the fields of `patch` set.
fn with(patch: Value) -> Value {
    let mut body = minimal("p");
    for (key, value) in patch.as_object().expect("object") {
        body[key] = value.clone();
    }
    body
}

fn application(name: &str, kind: &str, permissions: Value) -> Value {
    json!({"name": name, "type": kind, "permissions": permissions})
}

fn using(application_id: &str) -> Value {
    json!({"name": "p", "destination_url": "https://api.example.com", "application": {"id": application_id}})
}

/// Creates a private application and a proxy that sets every field: the application's id and
/// the proxy as created.
async fn full_proxy<S, B>(admin: Caller<'_, S>) -> (String, Value)
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let svc = application("svc", "private", json!(["token:create"]));
    let svc_id = admin.create("/applications", svc).await;
    let full = json!({
        "name": "Stripe payments", "destination_url": "https://api.stripe.example/v1/charges",
        "request_transform": {"code": REQUEST_CODE},
        "response_transform": {"code": "module.exports = async (req) => req.args;"},
        "application": {"id": svc_id}, "configuration": {"STRIPE_KEY": "sk_test_123"}, "require_auth": false,
    });
    let created = admin.post("/proxies", full).await.expect(201).body;
    (svc_id, created)
}

async fn a_created_proxy_carries_its_key_owner_and_configuration(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let (svc_id, c) = full_proxy(admin).await;
    let key = c["key"].as_str().expect("key");
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
    assert_eq!(c["request_transform"]["code"], json!(REQUEST_CODE));
    assert_eq!(c["require_auth"], json!(false));
    assert!(
        c.get("modified_by").is_none() && c.get("modified_at").is_none(),
        "not on the create response"
    );
    assert!(c["created_by"].is_string() && c["created_at"].is_string());

    let got = admin.page(&format!("/proxies/{}", id_of(&c))).await;
    assert_eq!(
        got["modified_at"], c["created_at"],
        "never modified: modified_* equal created_*"
    );
    assert_eq!(got["modified_by"], c["created_by"]);
    assert_eq!(got["key"], json!(key));
    assert_eq!(got["configuration"], c["configuration"]);
}

async fn a_minimal_proxy_requires_auth_and_omits_what_is_unset(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let created = admin.post("/proxies", minimal("other")).await.expect(201);
    assert_eq!(
        created.body["require_auth"],
        json!(true),
        "require_auth defaults to true"
    );
    for absent in OPTIONAL {
        assert!(
            created.body.get(absent).is_none(),
            "{absent} is omitted when unset"
        );
    }
}

async fn lists_are_oldest_first_and_filter_by_name_and_id(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = id_of(&full_proxy(admin).await.1);
    let other_id = admin.create("/proxies", minimal("other")).await;
    let list = admin.page("/proxies").await;
    assert_eq!(total(&list), &json!(2));
    assert_eq!(list["data"][0]["id"], json!(id), "oldest first");
    assert!(
        list["data"][0]["modified_at"].is_string(),
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
        assert_eq!(admin.total(&format!("/proxies?{q}")).await, json!(n), "{q}");
    }
    let paged = admin
        .page(&format!("/proxies?id={id}&id={other_id}&size=1&page=2"))
        .await;
    assert_eq!(
        paged["pagination"],
        json!({"total_items": 2, "page_number": 2, "page_size": 1, "total_pages": 2})
    );
    assert_eq!(
        admin
            .total(&format!("/proxies?id={other_id}&name=stripe"))
            .await,
        json!(0),
        "filters AND together"
    );
    for bad in ["id=x", "page=0", "size=101", "color=red", "name=a&name=b"] {
        admin.get(&format!("/proxies?{bad}")).await.expect(400);
    }
}

/// PUT is a full replacement: omitted optional fields go back to their defaults.
async fn put_replaces_the_whole_proxy(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let c = full_proxy(admin).await.1;
    let uri = format!("/proxies/{}", id_of(&c));
    let replacement = json!({"name": "renamed", "destination_url": "https://api.example.org/"});
    let u = admin.put(&uri, replacement).await.expect(200).body;
    assert_eq!(
        (&u["id"], &u["key"], &u["created_at"], &u["created_by"]),
        (&c["id"], &c["key"], &c["created_at"], &c["created_by"])
    );
    assert_eq!(u["name"], json!("renamed"));
    assert_eq!(u["require_auth"], json!(true));
    for absent in OPTIONAL {
        assert!(u.get(absent).is_none(), "{absent} returned to its default");
    }
    assert!(u["modified_at"].as_str() > c["created_at"].as_str());
    assert_eq!(admin.page(&uri).await, u);
}

async fn deleted_proxies_are_gone(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let uri = format!("/proxies/{}", id_of(&full_proxy(admin).await.1));
    admin.delete(&uri).await.expect(204);
    admin.get(&uri).await.expect(404);
    admin.delete(&uri).await.expect(404);
    admin.put(&uri, minimal("x")).await.expect(404);
    admin.get("/proxies/not-a-uuid").await.expect(400);
}

/// Destinations refused whatever else the proxy says.
const BAD_DESTINATIONS: [&str; 9] = [
    "http://api.example.com",
    "ftp://api.example.com",
    "/relative",
    "https://127.0.0.1/",
    "https://10.0.0.8/",
    "https://169.254.169.254/latest",
    "https://[::1]/",
    "https://0.0.0.0/",
    "https://user:pw@api.example.com/",
];

/// Proxy bodies that must be refused, each with the field its problem names.
fn invalid_proxies() -> Vec<(Value, &'static str)> {
    let big_config: serde_json::Map<String, Value> =
        (0..101).map(|i| (format!("K{i}"), json!("v"))).collect();
    let long_url = format!("https://a.example.com/{}", "x".repeat(400));
    let mut cases = vec![
        (with(json!({"name": ""})), "name"),
        (with(json!({"name": "n".repeat(201)})), "name"),
        (json!({"destination_url": "https://a.example.com"}), "name"),
        (json!({"name": "p"}), "destination_url"),
        (
            with(json!({"destination_url": long_url})),
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
    cases.extend(
        BAD_DESTINATIONS
            .iter()
            .map(|url| (with(json!({ "destination_url": url })), "destination_url")),
    );
    cases
}

async fn refused_proxies_name_the_field_and_are_not_stored(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    for (body, field) in invalid_proxies() {
        admin.refuses("/proxies", body, field).await;
    }
    assert_eq!(admin.total("/proxies").await, json!(0), "nothing stored");
}

async fn boundaries_are_accepted_and_refused_updates_change_nothing(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let ok = with(
        json!({"name": "n".repeat(200), "request_transform": {"code": "x".repeat(50_000)},
        "configuration": (0..100).map(|i| (format!("K{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()}),
    );
    let uri = format!("/proxies/{}", admin.create("/proxies", ok).await);
    assert_eq!(
        admin.total("/proxies").await,
        json!(1),
        "only the valid proxy was stored"
    );
    // Updates validate the same way and change nothing when refused.
    let refused_url = with(json!({"destination_url": "http://x.example.com"}));
    admin.put(&uri, refused_url).await.expect(400);
    admin.put(&uri, with(json!({"key": "x"}))).await.expect(400);
    assert_eq!(admin.page(&uri).await["name"], json!("n".repeat(200)));
}

async fn proxies_take_only_their_tenants_token_applications(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let public = application("pub", "public", json!(["token:create"]));
    let public = admin.create("/applications", public).await;
    let private = application("priv", "private", json!(["token:read"]));
    let private = admin.create("/applications", private).await;
    let management = application("mgmt", "management", json!(["proxy:read"]));
    let management = admin.create("/applications", management).await;
    let foreign = application("b", "private", json!(["token:read"]));
    let foreign = admin
        .with_key(&b.admin_key)
        .create("/applications", foreign)
        .await;
    admin.post("/proxies", using(&public)).await.expect(201);
    admin.post("/proxies", using(&private)).await.expect(201);
    for refused in [&management, &foreign] {
        let r = admin.post("/proxies", using(refused)).await.expect(400);
        assert_eq!(r.error_fields(), vec!["application.id"]);
    }
    // An unused application deletes as before.
    let uri = format!("/applications/{management}");
    admin.delete(&uri).await.expect(204);
}

async fn an_application_proxies_use_cannot_become_management(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let private = application("priv", "private", json!(["token:read"]));
    let private = admin.create("/applications", private).await;
    admin.post("/proxies", using(&private)).await.expect(201);
    let management = application("priv", "management", json!(["proxy:read"]));
    let r = admin
        .put(&format!("/applications/{private}"), management)
        .await
        .expect(409);
    let detail = r.body["detail"].as_str().expect("detail");
    assert!(detail.contains("used by proxies"), "{detail}");
}

async fn an_application_proxies_use_is_deleted_only_once_unused(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let public = application("pub", "public", json!(["token:create"]));
    let public_id = admin.create("/applications", public).await;
    let p1 = admin.create("/proxies", using(&public_id)).await;
    let public = format!("/applications/{public_id}");
    // Deleting it is a conflict that names the proxy.
    let r = admin.delete(&public).await.expect(409);
    let detail = r.body["detail"].as_str().expect("detail");
    assert!(detail.contains(&p1), "{detail}");
    admin.get(&public).await.expect(200);
    // Once the proxy no longer names it, the delete goes through.
    let uri = format!("/proxies/{p1}");
    admin.put(&uri, minimal("p")).await.expect(200);
    admin.delete(&public).await.expect(204);
}

async fn permissions_are_required(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin.create("/proxies", minimal("p")).await;
    let all = ["proxy:create", "proxy:read", "proxy:update", "proxy:delete"];
    for missing in all {
        let perms: Vec<&str> = all.iter().copied().filter(|p| *p != missing).collect();
        let key = admin
            .app_key(application("m", "management", json!(perms)))
            .await;
        let caller = admin.with_key(&key);
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
        caller.send(method, &uri, body).await.expect(403);
        if missing == "proxy:read" {
            caller.get("/proxies").await.expect(403);
        }
    }
    // A private (token) application holds no proxy permissions at all.
    let private = admin
        .app_key(application("t", "private", json!(["token:read"])))
        .await;
    admin.with_key(&private).get("/proxies").await.expect(403);
    let anonymous = Caller::anonymous(&app);
    anonymous
        .post("/proxies", minimal("anon"))
        .await
        .expect(401);
    // Nothing changed.
    let list = admin.page("/proxies").await;
    assert_eq!(total(&list), &json!(1));
    assert_eq!(list["data"][0]["name"], json!("p"));
}

async fn tenants_are_isolated(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let owner = Caller::new(&app, &a.admin_key);
    let id = owner.create("/proxies", minimal("a's proxy")).await;
    let uri = format!("/proxies/{id}");
    let stranger = Caller::new(&app, &b.admin_key);
    stranger.get(&uri).await.expect(404);
    stranger.put(&uri, minimal("stolen")).await.expect(404);
    stranger.delete(&uri).await.expect(404);
    let by_id = stranger.total(&format!("/proxies?id={id}")).await;
    assert_eq!(by_id, json!(0));
    let by_name = stranger.page("/proxies?name=proxy").await;
    assert_eq!(by_name["data"], json!([]));
    assert_eq!(owner.page(&uri).await["name"], json!("a's proxy"));
}

/// Configuration, invocation key and transform code are sealed at rest: the database's own
/// files (SQLite file and WAL; PostgreSQL heap, index and TOAST files) never hold them.
async fn configuration_is_encrypted_at_rest(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let secret = "sk_live_PLAINTEXT_MARKER_42";
    let code = "module.exports = async (req) => ({ body: 'CODE_PLAINTEXT_MARKER' });";
    let body = json!({"name": "NAME_MARKER", "destination_url": "https://api.example.com",
        "configuration": {"API_KEY": secret}, "request_transform": {"code": code}});
    let r = admin.post("/proxies", body).await.expect(201);
    let key = r.body["key"].as_str().expect("key").to_string();
    let id: ProxyId = id_of(&r.body).parse().expect("uuid");
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
    let got = admin.page(&format!("/proxies/{id}")).await;
    assert_eq!(got["key"], json!(key));
    assert_eq!(got["request_transform"]["code"], json!(code));
    assert_eq!(got["configuration"], json!({"API_KEY": secret}));
}

async fn keys_are_unique_across_1000_proxies(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let mut keys = HashSet::new();
    for i in 0..1000 {
        let r = admin
            .post("/proxies", minimal(&format!("p{i}")))
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
    let app = serve(st).await;
    let admin = Caller::new(&app, &t.admin_key);
    for url in [
        "http://127.0.0.1:18081/",
        "https://10.0.0.8/",
        "http://localhost:9000/x",
    ] {
        let body = json!({"name": "internal", "destination_url": url});
        admin.post("/proxies", body).await.expect(201);
    }
    let body = json!({"name": "bad", "destination_url": "ftp://127.0.0.1/"});
    admin.post("/proxies", body).await.expect(400);
}

async fn transforms_must_compile(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let broken = "module.exports = async (req) => {\n  const x = ;\n  return req.args;\n};";
    for field in ["request_transform", "response_transform"] {
        let mut body = minimal("p");
        body[field] = json!({"code": broken});
        let r = admin.post("/proxies", body).await.expect(400);
        let key = format!("{field}.code");
        assert_eq!(r.error_fields(), vec![key.clone()]);
        let message = r.body["errors"][&key][0].as_str().expect("message");
        assert!(message.contains("line 2"), "{message}");
    }
    let ok = json!({"name": "p", "destination_url": "https://api.example.com",
        "request_transform": {"code": "module.exports = async (req) => req.args;"}});
    let uri = format!("/proxies/{}", admin.create("/proxies", ok).await);
    let mut bad = minimal("p");
    bad["response_transform"] = json!({"code": broken});
    admin.put(&uri, bad).await.expect(400);
    assert!(
        admin.page(&uri).await.get("response_transform").is_none(),
        "a refused update changes nothing"
    );
}
