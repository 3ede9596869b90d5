//! No escalation (docs/api.md, "No escalation"): no caller can grant, or obtain a key for, permissions it
//! does not hold itself — through application create, update, regenerate, delete, or by binding
//! an application to a proxy whose transforms it writes. On both backends.

use actix_web::{
    dev::{Service, ServiceResponse},
    http::Method,
    Error,
};
use serde_json::{json, Value};
use tessera_testkit::api::{app_key, app_with_tenant, application_id as app_id, Caller, Reply};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    update_only_key_cannot_rekey_or_raise_anyone,
    create_grants_only_what_the_caller_holds,
    a_manager_manages_applications_within_its_own_grants,
    binding_an_application_to_a_proxy_needs_its_grants,
);

/// Creates the application "reader" (`token:read`): its id.
async fn reader_id<S, B>(app: &S, admin: &str) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: actix_web::body::MessageBody,
{
    let reader = json!({"name": "reader", "type": "private", "permissions": ["token:read"]});
    app_key(app, admin, reader).await;
    app_id(app, admin, "reader").await
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
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = t.admin_key.as_str();
    let updater = app_key(
        &app,
        admin,
        json!({"name": "updater", "type": "management", "permissions": ["application:update"]}),
    )
    .await;
    let admin_id = app_id(&app, admin, "admin").await;
    let own_id = app_id(&app, admin, "updater").await;
    let as_updater = Caller::new(&app, &updater);

    let rekey_admin = format!("/applications/{admin_id}/regenerate");
    let r = as_updater
        .send(Method::POST, &rekey_admin, None)
        .await
        .expect(403);
    assert!(r.body.get("key").is_none());
    // The admin key still works: nothing was re-keyed.
    Caller::new(&app, admin)
        .get("/applications")
        .await
        .expect(200);

    let raise = json!({"name": "updater", "type": "management",
                       "permissions": ["application:update", "application:create"]});
    let own = format!("/applications/{own_id}");
    let r = as_updater.put(&own, raise).await.expect(403);
    refused_for(&r, "application:create");
    let narrow_admin =
        json!({"name": "admin", "type": "management", "permissions": ["application:update"]});
    as_updater
        .put(&format!("/applications/{admin_id}"), narrow_admin)
        .await
        .expect(403);
    let rekey_own = format!("{own}/regenerate");
    as_updater
        .send(Method::POST, &rekey_own, None)
        .await
        .expect(200);
}

/// Create: management, tenant-wide token and container-scoped grants, each only if held.
async fn create_grants_only_what_the_caller_holds(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = t.admin_key.as_str();
    let creator = app_key(
        &app,
        admin,
        json!({"name": "creator", "type": "management", "permissions": ["application:create", "proxy:read"]}),
    )
    .await;
    let as_creator = Caller::new(&app, &creator);
    let create = |body: Value| as_creator.post("/applications", body);
    create(json!({"name": "ro", "type": "management", "permissions": ["proxy:read"]}))
        .await
        .expect(201);
    for (body, missing) in [
        (
            json!({"name": "rw", "type": "management", "permissions": ["proxy:create"]}),
            "proxy:create",
        ),
        (
            json!({"name": "tok", "type": "private", "permissions": ["token:read"]}),
            "token:read",
        ),
        (
            json!({"name": "web", "type": "public",
                   "rules": [{"priority": 1, "container": "/pci/", "permissions": ["token:create"]}]}),
            "token:create",
        ),
    ] {
        let r = create(body).await.expect(403);
        refused_for(&r, missing);
    }
    // The admin holds everything, so grants anything.
    let tok = json!({"name": "tok", "type": "private", "permissions": ["token:read"]});
    Caller::new(&app, admin)
        .post("/applications", tok)
        .await
        .expect(201);
}

/// A delegated manager (all `application:*`) handles applications inside its grants and no
/// others: it cannot re-key, change or delete the admin, nor a token-holding application.
async fn a_manager_manages_applications_within_its_own_grants(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
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
    let as_manager = Caller::new(&app, &manager);
    let reader = reader_id(&app, admin).await;
    let admin_id = app_id(&app, admin, "admin").await;
    for target in [&reader, &admin_id] {
        let path = format!("/applications/{target}");
        let regenerate = format!("{path}/regenerate");
        as_manager
            .send(Method::POST, &regenerate, None)
            .await
            .expect(403);
        as_manager.delete(&path).await.expect(403);
        let narrowed =
            json!({"name": "x", "type": "management", "permissions": ["application:read"]});
        as_manager.put(&path, narrowed).await.expect(403);
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
    let regenerate = format!("{path}/regenerate");
    as_manager
        .send(Method::POST, &regenerate, None)
        .await
        .expect(200);
    as_manager.delete(&path).await.expect(204);
}

/// A proxy's transforms act with its application's key, and whoever writes the proxy writes
/// the transforms: naming an application needs its grants.
async fn binding_an_application_to_a_proxy_needs_its_grants(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = t.admin_key.as_str();
    let proxies = app_key(
        &app,
        admin,
        json!({"name": "proxies", "type": "management", "permissions": ["proxy:create", "proxy:update", "proxy:read", "application:read"]}),
    )
    .await;
    let as_proxies = Caller::new(&app, &proxies);
    let reader = reader_id(&app, admin).await;
    let body = |application: Option<&str>| {
        let mut b = json!({"name": "p", "destination_url": "https://example.com/"});
        if let Some(id) = application {
            b["application"] = json!({"id": id});
        }
        b
    };
    let bound = body(Some(&reader));
    let r = as_proxies.post("/proxies", bound.clone()).await.expect(403);
    refused_for(&r, "token:read");
    let created = as_proxies.post("/proxies", body(None)).await.expect(201);
    let path = format!("/proxies/{}", created.body["id"].as_str().expect("id"));
    as_proxies.put(&path, bound.clone()).await.expect(403);
    Caller::new(&app, admin)
        .put(&path, bound.clone())
        .await
        .expect(200);
    // Rewriting a proxy bound to an application it could not bind is refused too.
    as_proxies.put(&path, bound).await.expect(403);
}
