//! Token associations and child tokens (source §4.1–4.4, SUPPLEMENT §4), on both backends:
//! statuses and bodies, the permission matrix, tenant isolation, pagination and graph shapes.

use std::collections::HashSet;

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    test, Error,
};
use serde_json::{json, Value};
use tessera_testkit::api::{app_key, send, state, tenant};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    association_lifecycle_and_statuses,
    child_creation_and_listing,
    permission_matrix,
    other_tenants_tokens_are_not_found,
    pagination_over_120_children_with_filters,
    cycles_and_shared_children,
    deleting_a_token_removes_its_links_but_not_its_children,
);

const MIB: usize = 1024 * 1024;

async fn token<S, B>(app: &S, key: &str, body: Value) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    tessera_testkit::api::create(app, key, "/tokens", body).await
}

async fn children<S, B>(app: &S, key: &str, parent: &str, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    send(
        app,
        Method::GET,
        &format!("/tokens/{parent}/children{query}"),
        Some(key),
        None,
    )
    .await
    .expect(200)
    .body
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|t| t["id"].as_str().expect("id").to_string())
        .collect()
}

async fn association_lifecycle_and_statuses(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let p = token(&app, k, json!({"type": "token", "data": "parent"})).await;
    let c = token(&app, k, json!({"type": "token", "data": "child"})).await;
    let link = format!("/tokens/{p}/children/{c}");
    let r = send(&app, Method::POST, &link, Some(k), None)
        .await
        .expect(204);
    assert!(r.raw.is_empty(), "204 has no body");
    send(&app, Method::POST, &link, Some(k), None)
        .await
        .expect(204);
    let page = children(&app, k, &p, "").await;
    assert_eq!(ids(&page), vec![c.clone()], "creating twice links once");
    assert_eq!(
        page["data"][0]["data"],
        json!("child"),
        "listed children carry data"
    );
    send(&app, Method::DELETE, &link, Some(k), None)
        .await
        .expect(204);
    send(&app, Method::DELETE, &link, Some(k), None)
        .await
        .expect(404);
    assert_eq!(
        children(&app, k, &p, "").await["pagination"]["total_items"],
        json!(0)
    );
    // Both tokens survive the unlink.
    send(&app, Method::GET, &format!("/tokens/{c}"), Some(k), None)
        .await
        .expect(200);

    let r = send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children/{p}"),
        Some(k),
        None,
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["child_id"]);
    let missing = uuid::Uuid::new_v4();
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children/{missing}"),
        Some(k),
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{missing}/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::DELETE,
        &format!("/tokens/{missing}/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(404);
    let r = send(
        &app,
        Method::POST,
        &format!("/tokens/nope/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["parent_id"]);
    let r = send(
        &app,
        Method::DELETE,
        &format!("/tokens/{p}/children/nope"),
        Some(k),
        None,
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["child_id"]);
    send(&app, Method::GET, "/tokens/nope/children", Some(k), None)
        .await
        .expect(400);
    send(&app, Method::POST, &link, None, None)
        .await
        .expect(401);
    send(
        &app,
        Method::GET,
        &format!("/tokens/{p}/children"),
        Some("key_wrong"),
        None,
    )
    .await
    .expect(401);
}

async fn child_creation_and_listing(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let p = token(&app, k, json!({"type": "token", "data": "parent"})).await;
    let body = json!({"type": "card", "data": {"number": "4242424242424242"}, "metadata": {"role": "backup"}});
    let r = send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children"),
        Some(k),
        Some(body),
    )
    .await
    .expect(201);
    let b = &r.body;
    assert!(
        b.get("data").is_none(),
        "the create-child response omits data"
    );
    for field in [
        "id",
        "tenant_id",
        "type",
        "containers",
        "created_by",
        "created_at",
        "metadata",
    ] {
        assert!(b.get(field).is_some(), "create-child response has {field}");
    }
    assert_eq!(b["containers"], json!(["/pci/high/"]));
    let page = children(&app, k, &p, "").await;
    assert_eq!(ids(&page), vec![b["id"].as_str().expect("id").to_string()]);
    assert_eq!(
        page["data"][0]["data"],
        json!({"number": "4242424242424242"})
    );
    // Validation failures and a missing parent leave nothing behind.
    let before = send(&app, Method::GET, "/tokens", Some(k), None)
        .await
        .expect(200)
        .body["pagination"]["total_items"]
        .clone();
    let r = send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children"),
        Some(k),
        Some(json!({"type": "card", "data": {"number": "1"}})),
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["data.number"]);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children"),
        Some(k),
        Some(json!({"type": "token"})),
    )
    .await
    .expect(400);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children"),
        Some(k),
        Some(json!({"type": "token", "data": 1, "bogus": 1})),
    )
    .await
    .expect(400);
    let missing = uuid::Uuid::new_v4();
    send(
        &app,
        Method::POST,
        &format!("/tokens/{missing}/children"),
        Some(k),
        Some(json!({"type": "token", "data": 1})),
    )
    .await
    .expect(404);
    send(
        &app,
        Method::GET,
        &format!("/tokens/{missing}/children"),
        Some(k),
        None,
    )
    .await
    .expect(404);
    let after = send(&app, Method::GET, "/tokens", Some(k), None)
        .await
        .expect(200)
        .body["pagination"]["total_items"]
        .clone();
    assert_eq!(before, after, "no orphan tokens");
    for bad in ["?page=0", "?size=101", "?type=gold", "?id=x", "?nope=1"] {
        send(
            &app,
            Method::GET,
            &format!("/tokens/{p}/children{bad}"),
            Some(k),
            None,
        )
        .await
        .expect(400);
    }
}

async fn permission_matrix(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = t.admin_key.as_str();
    // Parent and child live in /general/high/ (the default); a linked pair exists already.
    let p = token(&app, admin, json!({"type": "token", "data": "p"})).await;
    let c = token(&app, admin, json!({"type": "token", "data": "c"})).await;
    let linked = token(&app, admin, json!({"type": "token", "data": "linked"})).await;
    let secret = token(
        &app,
        admin,
        json!({"type": "token", "data": "s", "containers": ["/secret/"]}),
    )
    .await;
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children/{linked}"),
        Some(admin),
        None,
    )
    .await
    .expect(204);

    let key = |perms: Value, rules: Value| json!({"name": "k", "type": "private", "permissions": perms, "rules": rules});
    let everything = json!(["token:create", "token:read", "token:delete"]);
    let no_read = app_key(
        &app,
        admin,
        key(json!(["token:create", "token:delete"]), json!([])),
    )
    .await;
    let no_delete = app_key(
        &app,
        admin,
        key(json!(["token:create", "token:read"]), json!([])),
    )
    .await;
    let no_create = app_key(
        &app,
        admin,
        key(json!(["token:read", "token:delete"]), json!([])),
    )
    .await;
    // Everything, but only on a container our tokens are not in.
    let elsewhere = app_key(
        &app,
        admin,
        key(
            json!([]),
            json!([{"priority": 1, "container": "/other/", "permissions": everything}]),
        ),
    )
    .await;
    // Everything on /general/, but the secret child is out of reach.
    let general = app_key(
        &app,
        admin,
        key(
            json!([]),
            json!([{"priority": 1, "container": "/general/", "permissions": everything}]),
        ),
    )
    .await;

    let count = |v: Value| v["pagination"]["total_items"].clone();
    let link_pc = format!("/tokens/{p}/children/{c}");
    for k in [&no_read, &elsewhere] {
        send(&app, Method::POST, &link_pc, Some(k), None)
            .await
            .expect(403);
        send(
            &app,
            Method::GET,
            &format!("/tokens/{p}/children"),
            Some(k),
            None,
        )
        .await
        .expect(403);
        send(
            &app,
            Method::POST,
            &format!("/tokens/{p}/children"),
            Some(k),
            Some(json!({"type": "token", "data": 1})),
        )
        .await
        .expect(403);
    }
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children/{secret}"),
        Some(&general),
        None,
    )
    .await
    .expect(403);
    for k in [&no_delete, &elsewhere] {
        send(
            &app,
            Method::DELETE,
            &format!("/tokens/{p}/children/{linked}"),
            Some(k),
            None,
        )
        .await
        .expect(403);
    }
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children"),
        Some(&no_create),
        Some(json!({"type": "token", "data": 1})),
    )
    .await
    .expect(403);
    // token:create only on /general/: a child in /secret/ is refused.
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children"),
        Some(&general),
        Some(json!({"type": "token", "data": 1, "containers": ["/secret/x/"]})),
    )
    .await
    .expect(403);
    let r = send(
        &app,
        Method::GET,
        &format!("/tokens/{p}/children"),
        Some(&no_read),
        None,
    )
    .await
    .expect(403);
    assert!(r.body["detail"]
        .as_str()
        .expect("detail")
        .contains("token:read"));

    // Nothing changed: still exactly the one link, and no new tokens.
    let page = children(&app, admin, &p, "").await;
    assert_eq!(ids(&page), vec![linked.clone()]);
    assert_eq!(
        count(
            send(&app, Method::GET, "/tokens", Some(admin), None)
                .await
                .body
        ),
        json!(4)
    );

    // And the keys that hold the permissions succeed.
    send(&app, Method::POST, &link_pc, Some(&general), None)
        .await
        .expect(204);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children/{secret}"),
        Some(admin),
        None,
    )
    .await
    .expect(204);
    // Children the caller may not read are left out of the list and the count.
    let page = children(&app, &general, &p, "").await;
    assert_eq!(count(page.clone()), json!(2));
    assert!(!ids(&page).contains(&secret));
    assert_eq!(count(children(&app, admin, &p, "").await), json!(3));
    send(
        &app,
        Method::DELETE,
        &format!("/tokens/{p}/children/{linked}"),
        Some(&general),
        None,
    )
    .await
    .expect(204);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children"),
        Some(&general),
        Some(json!({"type": "token", "data": 1})),
    )
    .await
    .expect(201);
}

async fn other_tenants_tokens_are_not_found(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let (ak, bk) = (a.admin_key.as_str(), b.admin_key.as_str());
    let ap = token(&app, ak, json!({"type": "token", "data": "a-parent"})).await;
    let ac = token(&app, ak, json!({"type": "token", "data": "a-child"})).await;
    let bp = token(&app, bk, json!({"type": "token", "data": "b-parent"})).await;
    send(
        &app,
        Method::POST,
        &format!("/tokens/{ap}/children/{ac}"),
        Some(ak),
        None,
    )
    .await
    .expect(204);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{ap}/children/{ac}"),
        Some(bk),
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{bp}/children/{ac}"),
        Some(bk),
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{ap}/children/{bp}"),
        Some(ak),
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::DELETE,
        &format!("/tokens/{ap}/children/{ac}"),
        Some(bk),
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{ap}/children"),
        Some(bk),
        Some(json!({"type": "token", "data": 1})),
    )
    .await
    .expect(404);
    send(
        &app,
        Method::GET,
        &format!("/tokens/{ap}/children"),
        Some(bk),
        None,
    )
    .await
    .expect(404);
    assert_eq!(ids(&children(&app, ak, &ap, "").await), vec![ac]);
    assert_eq!(
        children(&app, bk, &bp, "").await["pagination"]["total_items"],
        json!(0)
    );
}

async fn pagination_over_120_children_with_filters(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let p = token(&app, k, json!({"type": "token", "data": "parent"})).await;
    let mut created = vec![];
    for i in 0..120 {
        let body = if i % 4 == 0 {
            json!({"type": "card", "data": {"number": "4242424242424242"}, "metadata": {"batch": (i % 3).to_string()}})
        } else {
            json!({"type": "token", "data": i, "metadata": {"batch": (i % 3).to_string()}})
        };
        let r = send(
            &app,
            Method::POST,
            &format!("/tokens/{p}/children"),
            Some(k),
            Some(body),
        )
        .await
        .expect(201);
        created.push(r.body["id"].as_str().expect("id").to_string());
    }
    let mut seen = vec![];
    for page in 1..=3 {
        let body = children(&app, k, &p, &format!("?page={page}&size=50")).await;
        assert_eq!(
            body["pagination"],
            json!({"total_items": 120, "page_number": page, "page_size": 50, "total_pages": 3})
        );
        seen.extend(ids(&body));
    }
    assert_eq!(seen.len(), 120);
    assert_eq!(
        seen.iter().collect::<HashSet<_>>().len(),
        120,
        "no duplicates"
    );
    assert_eq!(seen, created, "stable creation order, no misses");
    assert_eq!(
        ids(&children(&app, k, &p, "?page=4&size=50").await),
        Vec::<String>::new()
    );
    assert_eq!(
        seen,
        {
            let mut again = vec![];
            for page in 1..=3 {
                again.extend(ids(&children(
                    &app,
                    k,
                    &p,
                    &format!("?page={page}&size=50"),
                )
                .await));
            }
            again
        },
        "order is stable across calls"
    );
    // Filters combine with AND: cards (i % 4 == 0) in batch 0 (i % 3 == 0) → i % 12 == 0 → 10.
    let cards = children(&app, k, &p, "?type=card&size=100").await;
    assert_eq!(cards["pagination"]["total_items"], json!(30));
    let both = children(&app, k, &p, "?type=card&metadata.batch=0&size=100").await;
    assert_eq!(both["pagination"]["total_items"], json!(10));
    let expected: Vec<String> = created
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 12 == 0)
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(ids(&both), expected);
    let by_id = children(
        &app,
        k,
        &p,
        &format!("?id={}&id={}&type=token", created[0], created[1]),
    )
    .await;
    assert_eq!(ids(&by_id), vec![created[1].clone()], "id AND type");
    let unrelated = token(&app, k, json!({"type": "token", "data": 0})).await;
    assert_eq!(
        children(&app, k, &p, &format!("?id={unrelated}")).await["pagination"]["total_items"],
        json!(0)
    );
}

async fn cycles_and_shared_children(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let a = token(&app, k, json!({"type": "token", "data": "a"})).await;
    let b = token(&app, k, json!({"type": "token", "data": "b"})).await;
    let c = token(&app, k, json!({"type": "token", "data": "c"})).await;
    send(
        &app,
        Method::POST,
        &format!("/tokens/{a}/children/{b}"),
        Some(k),
        None,
    )
    .await
    .expect(204);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{b}/children/{a}"),
        Some(k),
        None,
    )
    .await
    .expect(204);
    assert_eq!(ids(&children(&app, k, &a, "").await), vec![b.clone()]);
    assert_eq!(ids(&children(&app, k, &b, "").await), vec![a.clone()]);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{a}/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(204);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{b}/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(204);
    assert_eq!(
        ids(&children(&app, k, &a, "").await),
        vec![b.clone(), c.clone()]
    );
    assert_eq!(ids(&children(&app, k, &b, "").await), vec![a, c]);
}

async fn deleting_a_token_removes_its_links_but_not_its_children(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let grand = token(&app, k, json!({"type": "token", "data": "g"})).await;
    let p = token(&app, k, json!({"type": "token", "data": "p"})).await;
    let c = token(&app, k, json!({"type": "token", "data": "c"})).await;
    send(
        &app,
        Method::POST,
        &format!("/tokens/{grand}/children/{p}"),
        Some(k),
        None,
    )
    .await
    .expect(204);
    send(
        &app,
        Method::POST,
        &format!("/tokens/{p}/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(204);
    send(&app, Method::DELETE, &format!("/tokens/{p}"), Some(k), None)
        .await
        .expect(204);
    send(&app, Method::GET, &format!("/tokens/{c}"), Some(k), None)
        .await
        .expect(200);
    assert_eq!(
        children(&app, k, &grand, "").await["pagination"]["total_items"],
        json!(0),
        "link as child removed"
    );
    send(
        &app,
        Method::GET,
        &format!("/tokens/{p}/children"),
        Some(k),
        None,
    )
    .await
    .expect(404);
    send(
        &app,
        Method::DELETE,
        &format!("/tokens/{p}/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(404);
    // The former child can be linked again elsewhere; nothing dangling blocks it.
    send(
        &app,
        Method::POST,
        &format!("/tokens/{grand}/children/{c}"),
        Some(k),
        None,
    )
    .await
    .expect(204);
}
