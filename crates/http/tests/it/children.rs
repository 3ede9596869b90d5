//! Token associations and child tokens (docs/api.md, "Associations"), on both backends:
//! statuses and bodies, the permission matrix, tenant isolation, pagination and graph shapes.

use std::collections::HashSet;

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    Error,
};
use serde_json::{json, Value};
use tessera_testkit::{api::Reply, backend_tests, db::TestDatabase};

use crate::caller::{id_of, ids, one_tenant, total, two_tenants, Caller};

backend_tests!(
    linking_twice_links_once_and_unlinking_keeps_both_tokens,
    malformed_or_missing_ids_are_400_or_404,
    links_need_a_valid_key,
    a_created_child_is_listed_with_its_data,
    refused_children_leave_nothing_behind,
    child_list_queries_are_validated,
    every_missing_permission_is_403_and_changes_nothing,
    held_permissions_succeed_and_unreadable_children_are_hidden,
    other_tenants_tokens_are_not_found,
    pages_of_120_children_are_complete_and_stable,
    child_filters_combine_with_and,
    cycles_and_shared_children,
    deleting_a_token_removes_its_links_but_not_its_children,
);

/// The token and association requests these tests make, spelled as what they do.
trait Associations {
    /// Creates `token`-type tokens holding each of `data`: their ids, in order.
    async fn tokens<const N: usize>(&self, data: [&str; N]) -> [String; N];
    /// `POST /tokens/{parent}/children/{child}`: links `child` under `parent`.
    async fn link(&self, parent: &str, child: &str) -> Reply;
    /// A page of `parent`'s children, expecting 200.
    async fn children(&self, parent: &str, query: &str) -> Value;
    /// The tokens of [`Family`], `linked` linked under `p`.
    async fn family(&self) -> Family;
    /// A parent with 120 children: every fourth a card, `metadata.batch` the index modulo 3.
    /// The parent's id and the children's in creation order.
    async fn parent_of_120(&self) -> (String, Vec<String>);
}

impl<S, B> Associations for Caller<'_, S>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    async fn tokens<const N: usize>(&self, data: [&str; N]) -> [String; N] {
        let mut ids = vec![];
        for d in data {
            let body = json!({"type": "token", "data": d});
            ids.push(self.create("/tokens", body).await);
        }
        ids.try_into().expect("one id per token")
    }

    async fn link(&self, parent: &str, child: &str) -> Reply {
        self.post_empty(&format!("/tokens/{parent}/children/{child}"))
            .await
    }

    async fn children(&self, parent: &str, query: &str) -> Value {
        self.page(&format!("/tokens/{parent}/children{query}"))
            .await
    }

    async fn family(&self) -> Family {
        let [p, c, linked] = self.tokens(["p", "c", "linked"]).await;
        let secret = json!({"type": "token", "data": "s", "containers": ["/secret/"]});
        let secret = self.create("/tokens", secret).await;
        self.link(&p, &linked).await.expect(204);
        Family {
            p,
            c,
            linked,
            secret,
        }
    }

    async fn parent_of_120(&self) -> (String, Vec<String>) {
        let [p] = self.tokens(["parent"]).await;
        let mut created = vec![];
        for i in 0..120 {
            let body = if i % 4 == 0 {
                json!({"type": "card", "data": {"number": "4242424242424242"}, "metadata": {"batch": (i % 3).to_string()}})
            } else {
                json!({"type": "token", "data": i, "metadata": {"batch": (i % 3).to_string()}})
            };
            created.push(self.create(&format!("/tokens/{p}/children"), body).await);
        }
        (p, created)
    }
}

async fn linking_twice_links_once_and_unlinking_keeps_both_tokens(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [p, c] = admin.tokens(["parent", "child"]).await;
    let r = admin.link(&p, &c).await.expect(204);
    assert!(r.raw.is_empty(), "204 has no body");
    admin.link(&p, &c).await.expect(204);
    let page = admin.children(&p, "").await;
    assert_eq!(ids(&page), vec![c.clone()], "creating twice links once");
    assert_eq!(
        page["data"][0]["data"],
        json!("child"),
        "listed children carry data"
    );
    let unlink = format!("/tokens/{p}/children/{c}");
    admin.delete(&unlink).await.expect(204);
    admin.delete(&unlink).await.expect(404);
    assert_eq!(total(&admin.children(&p, "").await), &json!(0));
    // Both tokens survive the unlink.
    admin.get(&format!("/tokens/{c}")).await.expect(200);
}

async fn malformed_or_missing_ids_are_400_or_404(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [p, c] = admin.tokens(["parent", "child"]).await;
    let missing = uuid::Uuid::new_v4();
    let cases = [
        (
            Method::POST,
            format!("/tokens/{p}/children/{p}"),
            400,
            Some("child_id"),
        ),
        (
            Method::POST,
            format!("/tokens/{p}/children/{missing}"),
            404,
            None,
        ),
        (
            Method::POST,
            format!("/tokens/{missing}/children/{c}"),
            404,
            None,
        ),
        (
            Method::DELETE,
            format!("/tokens/{missing}/children/{c}"),
            404,
            None,
        ),
        (
            Method::POST,
            format!("/tokens/no/children/{c}"),
            400,
            Some("parent_id"),
        ),
        (
            Method::DELETE,
            format!("/tokens/{p}/children/no"),
            400,
            Some("child_id"),
        ),
        (Method::GET, "/tokens/no/children".to_string(), 400, None),
    ];
    for (method, uri, status, field) in cases {
        let r = admin.send(method, &uri, None).await.expect(status);
        if let Some(field) = field {
            assert_eq!(r.error_fields(), vec![field], "{uri}");
        }
    }
}

async fn links_need_a_valid_key(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [p, c] = admin.tokens(["parent", "child"]).await;
    let anonymous = Caller::anonymous(&app);
    anonymous.link(&p, &c).await.expect(401);
    let wrong = admin.with_key("key_wrong");
    wrong
        .get(&format!("/tokens/{p}/children"))
        .await
        .expect(401);
}

async fn a_created_child_is_listed_with_its_data(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [p] = admin.tokens(["parent"]).await;
    let body = json!({"type": "card", "data": {"number": "4242424242424242"}, "metadata": {"role": "backup"}});
    let r = admin
        .post(&format!("/tokens/{p}/children"), body)
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
    let page = admin.children(&p, "").await;
    assert_eq!(ids(&page), vec![id_of(b)]);
    assert_eq!(
        page["data"][0]["data"],
        json!({"number": "4242424242424242"})
    );
}

/// Validation failures and a missing parent leave nothing behind.
async fn refused_children_leave_nothing_behind(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [p] = admin.tokens(["parent"]).await;
    let before = admin.total("/tokens").await;
    let r = admin
        .post(
            &format!("/tokens/{p}/children"),
            json!({"type": "card", "data": {"number": "1"}}),
        )
        .await
        .expect(400);
    assert_eq!(r.error_fields(), vec!["data.number"]);
    let missing = uuid::Uuid::new_v4();
    for (parent, body, status) in [
        (p.clone(), json!({"type": "token"}), 400),
        (
            p.clone(),
            json!({"type": "token", "data": 1, "bogus": 1}),
            400,
        ),
        (
            missing.to_string(),
            json!({"type": "token", "data": 1}),
            404,
        ),
    ] {
        let uri = format!("/tokens/{parent}/children");
        admin.post(&uri, body).await.expect(status);
    }
    let uri = format!("/tokens/{missing}/children");
    admin.get(&uri).await.expect(404);
    let after = admin.total("/tokens").await;
    assert_eq!(before, after, "no orphan tokens");
}

async fn child_list_queries_are_validated(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [p] = admin.tokens(["parent"]).await;
    for bad in ["?page=0", "?size=101", "?type=gold", "?id=x", "?nope=1"] {
        let uri = format!("/tokens/{p}/children{bad}");
        admin.get(&uri).await.expect(400);
    }
}

/// Tokens in /general/high/ (the default): parent `p`, child-to-be `c`, `linked` (already
/// linked under `p`), and `secret` in /secret/.
struct Family {
    p: String,
    c: String,
    linked: String,
    secret: String,
}

/// A private application's spec with `permissions` and `rules`.
fn key_spec(permissions: Value, rules: Value) -> Value {
    json!({"name": "k", "type": "private", "permissions": permissions, "rules": rules})
}

/// A spec granting everything, but only under `container`.
fn everything_on(container: &str) -> Value {
    let everything = json!(["token:create", "token:read", "token:delete"]);
    key_spec(
        json!([]),
        json!([{"priority": 1, "container": container, "permissions": everything}]),
    )
}

async fn every_missing_permission_is_403_and_changes_nothing(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let Family {
        p,
        c,
        linked,
        secret,
    } = admin.family().await;
    let no_read = admin
        .app_key(key_spec(json!(["token:create", "token:delete"]), json!([])))
        .await;
    let no_delete = admin
        .app_key(key_spec(json!(["token:create", "token:read"]), json!([])))
        .await;
    let no_create = admin
        .app_key(key_spec(json!(["token:read", "token:delete"]), json!([])))
        .await;
    // Everything, but only on a container our tokens are not in.
    let elsewhere = admin.app_key(everything_on("/other/")).await;
    // Everything on /general/, but the secret child is out of reach.
    let general = admin.app_key(everything_on("/general/")).await;

    let child = || Some(json!({"type": "token", "data": 1}));
    let list = format!("/tokens/{p}/children");
    let mut cases = vec![];
    for k in [&no_read, &elsewhere] {
        cases.push((k, Method::POST, format!("/tokens/{p}/children/{c}"), None));
        cases.push((k, Method::GET, list.clone(), None));
        cases.push((k, Method::POST, list.clone(), child()));
    }
    cases.push((
        &general,
        Method::POST,
        format!("/tokens/{p}/children/{secret}"),
        None,
    ));
    for k in [&no_delete, &elsewhere] {
        cases.push((
            k,
            Method::DELETE,
            format!("/tokens/{p}/children/{linked}"),
            None,
        ));
    }
    cases.push((&no_create, Method::POST, list.clone(), child()));
    // token:create only on /general/: a child in /secret/ is refused.
    let secret_child = json!({"type": "token", "data": 1, "containers": ["/secret/x/"]});
    cases.push((&general, Method::POST, list.clone(), Some(secret_child)));
    for (key, method, uri, body) in cases {
        admin
            .with_key(key)
            .send(method, &uri, body)
            .await
            .expect(403);
    }
    let r = admin.with_key(&no_read).get(&list).await.expect(403);
    assert!(r.body["detail"]
        .as_str()
        .expect("detail")
        .contains("token:read"));

    // Nothing changed: still exactly the one link, and no new tokens.
    assert_eq!(ids(&admin.children(&p, "").await), vec![linked.clone()]);
    assert_eq!(total(&admin.get("/tokens").await.body), &json!(4));
}

/// The keys that hold the permissions succeed, and children the caller may not read are left
/// out of the list and the count.
async fn held_permissions_succeed_and_unreadable_children_are_hidden(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let f = admin.family().await;
    let (p, secret) = (f.p.as_str(), &f.secret);
    let general_key = admin.app_key(everything_on("/general/")).await;
    let general = admin.with_key(&general_key);
    general.link(p, &f.c).await.expect(204);
    admin.link(p, secret).await.expect(204);
    let page = general.children(p, "").await;
    assert_eq!(total(&page), &json!(2));
    assert!(!ids(&page).contains(secret));
    assert_eq!(total(&admin.children(p, "").await), &json!(3));
    let unlink = format!("/tokens/{p}/children/{}", f.linked);
    general.delete(&unlink).await.expect(204);
    general
        .post(
            &format!("/tokens/{p}/children"),
            json!({"type": "token", "data": 1}),
        )
        .await
        .expect(201);
}

async fn other_tenants_tokens_are_not_found(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let (owner, stranger) = (
        Caller::new(&app, &a.admin_key),
        Caller::new(&app, &b.admin_key),
    );
    let [ap, ac] = owner.tokens(["a-parent", "a-child"]).await;
    let [bp] = stranger.tokens(["b-parent"]).await;
    owner.link(&ap, &ac).await.expect(204);
    for (caller, parent, child) in [
        (stranger, &ap, &ac),
        (stranger, &bp, &ac),
        (owner, &ap, &bp),
    ] {
        caller.link(parent, child).await.expect(404);
    }
    let list = format!("/tokens/{ap}/children");
    stranger.delete(&format!("{list}/{ac}")).await.expect(404);
    stranger
        .post(&list, json!({"type": "token", "data": 1}))
        .await
        .expect(404);
    stranger.get(&list).await.expect(404);
    assert_eq!(ids(&owner.children(&ap, "").await), vec![ac]);
    assert_eq!(total(&stranger.children(&bp, "").await), &json!(0));
}

async fn pages_of_120_children_are_complete_and_stable(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let (p, created) = admin.parent_of_120().await;
    let mut seen = vec![];
    for page in 1..=3 {
        let body = admin.children(&p, &format!("?page={page}&size=50")).await;
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
    let beyond = admin.children(&p, "?page=4&size=50").await;
    assert_eq!(ids(&beyond), Vec::<String>::new());
    let mut again = vec![];
    for page in 1..=3 {
        again.extend(ids(&admin
            .children(&p, &format!("?page={page}&size=50"))
            .await));
    }
    assert_eq!(seen, again, "order is stable across calls");
}

async fn child_filters_combine_with_and(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let (p, created) = admin.parent_of_120().await;
    // Cards (i % 4 == 0) in batch 0 (i % 3 == 0) → i % 12 == 0 → 10.
    let cards = admin.children(&p, "?type=card&size=100").await;
    assert_eq!(total(&cards), &json!(30));
    let both = admin
        .children(&p, "?type=card&metadata.batch=0&size=100")
        .await;
    assert_eq!(total(&both), &json!(10));
    let expected: Vec<String> = created.iter().step_by(12).cloned().collect();
    assert_eq!(ids(&both), expected);
    let query = format!("?id={}&id={}&type=token", created[0], created[1]);
    let by_id = admin.children(&p, &query).await;
    assert_eq!(ids(&by_id), vec![created[1].clone()], "id AND type");
    let unrelated = admin
        .create("/tokens", json!({"type": "token", "data": 0}))
        .await;
    let by_unrelated = admin.children(&p, &format!("?id={unrelated}")).await;
    assert_eq!(total(&by_unrelated), &json!(0));
}

async fn cycles_and_shared_children(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [a, b, c] = admin.tokens(["a", "b", "c"]).await;
    for (parent, child) in [(&a, &b), (&b, &a)] {
        admin.link(parent, child).await.expect(204);
    }
    assert_eq!(ids(&admin.children(&a, "").await), vec![b.clone()]);
    assert_eq!(ids(&admin.children(&b, "").await), vec![a.clone()]);
    for parent in [&a, &b] {
        admin.link(parent, &c).await.expect(204);
    }
    assert_eq!(
        ids(&admin.children(&a, "").await),
        vec![b.clone(), c.clone()]
    );
    assert_eq!(ids(&admin.children(&b, "").await), vec![a, c]);
}

async fn deleting_a_token_removes_its_links_but_not_its_children(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let [grand, p, c] = admin.tokens(["g", "p", "c"]).await;
    admin.link(&grand, &p).await.expect(204);
    admin.link(&p, &c).await.expect(204);
    admin.delete(&format!("/tokens/{p}")).await.expect(204);
    admin.get(&format!("/tokens/{c}")).await.expect(200);
    assert_eq!(
        total(&admin.children(&grand, "").await),
        &json!(0),
        "link as child removed"
    );
    let list = format!("/tokens/{p}/children");
    admin.get(&list).await.expect(404);
    admin.delete(&format!("{list}/{c}")).await.expect(404);
    // The former child can be linked again elsewhere; nothing dangling blocks it.
    admin.link(&grand, &c).await.expect(204);
}
