//! `PATCH /proxies/{id}` on both backends: a JSON merge patch over the stored proxy (present
//! fields replace, `null` removes an optional field, absent fields stay), checked as `PUT` is,
//! with `PUT`'s permission, audit event and answer; the key never changes.

use actix_web::{body::MessageBody, test};
use serde_json::{json, Value};
use tessera_testkit::{api::private_state, backend_tests, db::TestDatabase, upstream::Upstream};

use crate::caller::{
    id_of, one_tenant, proxy_post, two_tenants, with_gateway, Caller, ManagementApi,
};

backend_tests!(
    a_patch_changes_only_what_it_names,
    refused_patches_name_the_field_and_change_nothing,
    patches_need_proxy_update_on_the_tenants_proxy,
    patches_are_audited_as_updates,
    the_gateway_follows_a_patched_destination,
);

const REQUEST_CODE: &str = "module.exports = async function (req) { return { body: { transformed: true }, headers: req.args.headers }; };";
const RESPONSE_CODE: &str = "module.exports = async (req) => req.args;";

fn full(destination_url: &str) -> Value {
    json!({
        "name": "payments", "destination_url": destination_url,
        "request_transform": {"code": REQUEST_CODE},
        "response_transform": {"code": RESPONSE_CODE},
        "configuration": {"API_KEY": "sk_test_123", "REGION": "eu"}, "require_auth": false,
    })
}

/// Creates the [`full`] proxy to `https://api.example.com/v1` as `admin`: its id.
async fn payments_proxy<S, B>(admin: Caller<'_, S>) -> String
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    admin
        .create("/proxies", full("https://api.example.com/v1"))
        .await
}

async fn a_patch_changes_only_what_it_names(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let c = admin
        .post("/proxies", full("https://api.example.com/v1"))
        .await
        .expect(201)
        .body;
    let uri = format!("/proxies/{}", id_of(&c));
    let u = admin
        .merge_patch(&uri, &json!({"name": "renamed"}))
        .await
        .expect(200)
        .body;
    assert_eq!(u["name"], json!("renamed"));
    for kept in [
        "id",
        "key",
        "created_at",
        "created_by",
        "destination_url",
        "request_transform",
        "response_transform",
        "configuration",
        "require_auth",
    ] {
        assert_eq!(u[kept], c[kept], "{kept} kept");
    }
    assert!(u["modified_at"].as_str() > c["created_at"].as_str());
    assert_eq!(admin.page(&uri).await, u, "stored as answered");

    // `application/json` too; configuration merged key by key; `null` removes.
    let patch = json!({"configuration": {"REGION": null, "NEW": "v"}, "response_transform": null,
        "require_auth": null});
    let u = admin.patch(&uri, patch).await.expect(200).body;
    assert_eq!(
        u["configuration"],
        json!({"API_KEY": "sk_test_123", "NEW": "v"})
    );
    assert!(u.get("response_transform").is_none());
    assert_eq!(u["request_transform"]["code"], json!(REQUEST_CODE));
    assert_eq!(u["require_auth"], json!(true), "back to the default");
    let u = admin
        .merge_patch(&uri, &json!({"configuration": null}))
        .await
        .expect(200)
        .body;
    assert!(u.get("configuration").is_none());
    assert_eq!(u["key"], c["key"], "the key never changes");
    assert_eq!(admin.page(&uri).await, u);
}

async fn refused_patches_name_the_field_and_change_nothing(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = payments_proxy(admin).await;
    let uri = format!("/proxies/{id}");
    let before = admin.page(&uri).await;
    let broken = "module.exports = async (req) => {\n  const x = ;\n};";
    for (patch, field) in [
        (json!({"name": null}), "name"),
        (json!({"destination_url": null}), "destination_url"),
        (json!({"name": ""}), "name"),
        (json!({"name": 5}), "name"),
        (
            json!({"destination_url": "http://api.example.com"}),
            "destination_url",
        ),
        (json!({"key": "mine"}), "key"),
        (json!({"key": null}), "key"),
        (json!({"surprise": 1}), "surprise"),
        (json!({"surprise": null}), "surprise"),
        (
            json!({"request_transform": {"code": broken}}),
            "request_transform.code",
        ),
        (
            json!({"response_transform": {"code": broken}}),
            "response_transform.code",
        ),
        (json!({"configuration": {"K": 1}}), "configuration.K"),
        (json!({"application": {"id": "nope"}}), "application.id"),
        (json!([]), "body"),
    ] {
        let r = admin.merge_patch(&uri, &patch).await.expect(400);
        assert_eq!(r.error_fields(), vec![field.to_string()], "{patch}");
    }
    assert_eq!(admin.page(&uri).await, before, "nothing changed");
}

async fn patches_need_proxy_update_on_the_tenants_proxy(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let id = payments_proxy(admin).await;
    let uri = format!("/proxies/{id}");
    let patch = json!({"name": "changed"});
    let all = ["proxy:create", "proxy:read", "proxy:delete"];
    let spec = json!({"name": "m", "type": "management", "permissions": all});
    let key = admin.app_key(spec).await;
    admin
        .with_key(&key)
        .merge_patch(&uri, &patch)
        .await
        .expect(403);
    Caller::anonymous(&app)
        .merge_patch(&uri, &patch)
        .await
        .expect(401);
    let stranger = admin.with_key(&b.admin_key);
    stranger.merge_patch(&uri, &patch).await.expect(404);
    let missing = format!("/proxies/{}", uuid::Uuid::new_v4());
    admin.merge_patch(&missing, &patch).await.expect(404);
    admin
        .merge_patch("/proxies/not-a-uuid", &patch)
        .await
        .expect(400);
    assert_eq!(admin.page(&uri).await["name"], json!("payments"));
}

async fn patches_are_audited_as_updates(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = payments_proxy(admin).await;
    let uri = format!("/proxies/{id}");
    admin
        .merge_patch(&uri, &json!({"name": "audited"}))
        .await
        .expect(200);
    let page = admin.page("/audit-events?size=100").await;
    let latest = &page["data"][0];
    assert_eq!(latest["action"], json!("proxy.updated"), "{page}");
    assert_eq!(latest["resource_ids"], json!([id]));
}

async fn the_gateway_follows_a_patched_destination(db: &TestDatabase) {
    let (st, t, _) = private_state(db).await;
    let (old, new) = (Upstream::start(None).await, Upstream::start(None).await);
    let app = with_gateway(st).await;
    let admin = Caller::new(&app, &t.admin_key);
    let at = |u: &Upstream| format!("http://127.0.0.1:{}/base", u.addr.port());
    let c = admin.post("/proxies", full(&at(&old))).await.expect(201);
    let key = c.body["key"].as_str().expect("key").to_string();
    let uri = format!("/proxies/{}", id_of(&c.body));
    admin
        .merge_patch(&uri, &json!({"destination_url": at(&new)}))
        .await
        .expect(200);
    let res = test::call_service(&app, proxy_post(&key).to_request()).await;
    assert_eq!(res.status(), 200);
    assert_eq!((old.hits(), new.hits()), (0, 1), "the patched destination");
    assert_eq!(
        new.last_body(),
        r#"{"transformed":true}"#,
        "the kept request transform ran"
    );
}
