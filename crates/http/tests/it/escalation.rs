//! Attack finding 5 (SUPPLEMENT §9): no caller can grant, or obtain a key for, permissions it
//! does not hold itself — through application create, update, regenerate, delete, or by binding
//! an application to a proxy whose transforms it writes. On both backends.

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    test, Error,
};
use serde_json::{json, Value};
use tessera_testkit::api::{app_key, send, state, tenant, Reply};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    update_only_key_cannot_rekey_or_raise_anyone,
    create_grants_only_what_the_caller_holds,
    a_manager_manages_applications_within_its_own_grants,
    binding_an_application_to_a_proxy_needs_its_grants,
);

const MIB: usize = 1024 * 1024;

async fn call<S, B>(app: &S, key: &str, method: Method, path: &str, body: Option<Value>) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    send(app, method, path, Some(key), body).await
}

/// The id of the application `key` belongs to, read with the admin key.
async fn app_id<S, B>(app: &S, admin: &str, name: &str) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let page = call(app, admin, Method::GET, "/applications?size=100", None)
        .await
        .expect(200);
    page.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|a| a["name"] == name)
        .and_then(|a| a["id"].as_str())
        .expect("application")
        .to_string()
}

fn refused_for(reply: &Reply, permission: &str) {
    let detail = reply.body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(permission) && detail.contains("does not hold it"),
        "{detail}"
    );
}

/// The finding as reported: a key holding only `application:update` re-keyed the bootstrap
/// admin and could `PUT` itself more permissions.
async fn update_only_key_cannot_rekey_or_raise_anyone(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    let updater = app_key(
        &app,
        admin,
        json!({"name": "updater", "type": "management", "permissions": ["application:update"]}),
    )
    .await;
    let admin_id = app_id(&app, admin, "admin").await;
    let own_id = app_id(&app, admin, "updater").await;

    let r = call(
        &app,
        &updater,
        Method::POST,
        &format!("/applications/{admin_id}/regenerate"),
        None,
    )
    .await
    .expect(403);
    assert!(r.body.get("key").is_none());
    // The admin key still works: nothing was re-keyed.
    call(&app, admin, Method::GET, "/applications", None)
        .await
        .expect(200);

    let raise = json!({"name": "updater", "type": "management",
                       "permissions": ["application:update", "application:create"]});
    let r = call(
        &app,
        &updater,
        Method::PUT,
        &format!("/applications/{own_id}"),
        Some(raise),
    )
    .await
    .expect(403);
    refused_for(&r, "application:create");
    let narrow_admin =
        json!({"name": "admin", "type": "management", "permissions": ["application:update"]});
    call(
        &app,
        &updater,
        Method::PUT,
        &format!("/applications/{admin_id}"),
        Some(narrow_admin),
    )
    .await
    .expect(403);
    call(
        &app,
        &updater,
        Method::POST,
        &format!("/applications/{own_id}/regenerate"),
        None,
    )
    .await
    .expect(200);
}

/// Create: management, tenant-wide token and container-scoped grants, each only if held.
async fn create_grants_only_what_the_caller_holds(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    let creator = app_key(
        &app,
        admin,
        json!({"name": "creator", "type": "management", "permissions": ["application:create", "proxy:read"]}),
    )
    .await;
    let create = |body: Value| call(&app, &creator, Method::POST, "/applications", Some(body));
    create(json!({"name": "ro", "type": "management", "permissions": ["proxy:read"]}))
        .await
        .expect(201);
    let r = create(json!({"name": "rw", "type": "management", "permissions": ["proxy:create"]}))
        .await
        .expect(403);
    refused_for(&r, "proxy:create");
    let r = create(json!({"name": "tok", "type": "private", "permissions": ["token:read"]}))
        .await
        .expect(403);
    refused_for(&r, "token:read");
    let r = create(json!({"name": "web", "type": "public",
                          "rules": [{"priority": 1, "container": "/pci/", "permissions": ["token:create"]}]}))
    .await
    .expect(403);
    refused_for(&r, "token:create");
    // The admin holds everything, so grants anything.
    call(
        &app,
        admin,
        Method::POST,
        "/applications",
        Some(json!({"name": "tok", "type": "private", "permissions": ["token:read"]})),
    )
    .await
    .expect(201);
}

/// A delegated manager (all `application:*`) handles applications inside its grants and no
/// others: it cannot re-key, change or delete the admin, nor a token-holding application.
async fn a_manager_manages_applications_within_its_own_grants(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    let all_apps = json!([
        "application:create",
        "application:read",
        "application:update",
        "application:delete"
    ]);
    let manager = app_key(
        &app,
        admin,
        json!({"name": "manager", "type": "management", "permissions": all_apps}),
    )
    .await;
    app_key(
        &app,
        admin,
        json!({"name": "reader", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    let reader = app_id(&app, admin, "reader").await;
    let admin_id = app_id(&app, admin, "admin").await;
    for target in [&reader, &admin_id] {
        let path = format!("/applications/{target}");
        call(
            &app,
            &manager,
            Method::POST,
            &format!("{path}/regenerate"),
            None,
        )
        .await
        .expect(403);
        call(&app, &manager, Method::DELETE, &path, None)
            .await
            .expect(403);
        call(
            &app,
            &manager,
            Method::PUT,
            &path,
            Some(json!({"name": "x", "type": "management", "permissions": ["application:read"]})),
        )
        .await
        .expect(403);
    }
    let sub = app_key(
        &app,
        &manager,
        json!({"name": "sub", "type": "management", "permissions": ["application:read"]}),
    )
    .await;
    assert!(sub.starts_with("key_"));
    let sub_id = app_id(&app, admin, "sub").await;
    let path = format!("/applications/{sub_id}");
    call(
        &app,
        &manager,
        Method::POST,
        &format!("{path}/regenerate"),
        None,
    )
    .await
    .expect(200);
    call(&app, &manager, Method::DELETE, &path, None)
        .await
        .expect(204);
}

/// A proxy's transforms act with its application's key, and whoever writes the proxy writes
/// the transforms: naming an application needs its grants.
async fn binding_an_application_to_a_proxy_needs_its_grants(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    let proxies = app_key(
        &app,
        admin,
        json!({"name": "proxies", "type": "management", "permissions": ["proxy:create", "proxy:update", "proxy:read", "application:read"]}),
    )
    .await;
    app_key(
        &app,
        admin,
        json!({"name": "reader", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    let reader = app_id(&app, admin, "reader").await;
    let body = |application: Option<&str>| {
        let mut b = json!({"name": "p", "destination_url": "https://example.com/"});
        if let Some(id) = application {
            b["application"] = json!({"id": id});
        }
        b
    };
    let r = call(
        &app,
        &proxies,
        Method::POST,
        "/proxies",
        Some(body(Some(&reader))),
    )
    .await
    .expect(403);
    refused_for(&r, "token:read");
    let created = call(&app, &proxies, Method::POST, "/proxies", Some(body(None)))
        .await
        .expect(201);
    let path = format!("/proxies/{}", created.body["id"].as_str().expect("id"));
    call(
        &app,
        &proxies,
        Method::PUT,
        &path,
        Some(body(Some(&reader))),
    )
    .await
    .expect(403);
    call(&app, admin, Method::PUT, &path, Some(body(Some(&reader))))
        .await
        .expect(200);
    // Rewriting a proxy bound to an application it could not bind is refused too.
    call(
        &app,
        &proxies,
        Method::PUT,
        &path,
        Some(body(Some(&reader))),
    )
    .await
    .expect(403);
}
