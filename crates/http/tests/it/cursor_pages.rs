//! Cursor pages (`GET /v2/tokens`, `POST /v2/tokens/search`) and the search `query` string on
//! both backends (docs/api.md "Cursor pages", "Search query"): a walk returns every token
//! once while tokens are created, a cursor works only for its tenant, key and filters, and
//! neither a cursor nor a query reveals a token the caller cannot read, or their count.

use actix_web::body::MessageBody;
use serde_json::{json, Value};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{ids, one_tenant, total, two_tenants, Caller, ManagementApi};

backend_tests!(
    a_walk_returns_every_token_once_while_tokens_are_created,
    a_search_walk_pages_like_the_list,
    tampered_and_foreign_cursors_are_refused_alike,
    cursors_and_queries_never_reveal_unreadable_tokens,
    a_query_searches_v1_and_v2_alike,
    v2_requests_are_validated,
);

/// `pagination.next` of a cursor page, `None` when it is `null`.
fn next_of(page: &Value) -> Option<String> {
    match &page["pagination"]["next"] {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => panic!("next is a string or null, not {other}"),
    }
}

/// The query string `metadata={"walk":"<tag>"}`, URL-encoded, as node-sdk sends it.
fn metadata_json(tag: &str) -> String {
    form_urlencoded::byte_serialize(json!({ "walk": tag }).to_string().as_bytes()).collect()
}

/// Creates `n` tokens tagged `walk: tag` in `container`: their ids, oldest first.
async fn tagged<S, B>(c: Caller<'_, S>, n: usize, tag: &str, container: &str) -> Vec<String>
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let mut ids = vec![];
    for i in 0..n {
        let body = json!({"type": "token", "data": format!("{tag}-{i}"),
            "metadata": {"walk": tag}, "containers": [container]});
        ids.push(c.create("/tokens", body).await);
    }
    ids
}

/// Walks `GET /v2/tokens?<filters>&size=<size>` to its end, calling `between` after the
/// first page: every page's ids, in order.
async fn walk_list<S, B>(c: Caller<'_, S>, filters: &str, size: usize) -> Vec<Vec<String>>
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let mut pages = vec![];
    let mut start: Option<String> = None;
    for _ in 0..100 {
        let uri = match &start {
            None => format!("/v2/tokens?{filters}&size={size}"),
            Some(s) => format!("/v2/tokens?{filters}&size={size}&start={s}"),
        };
        let page = c.page(&uri).await;
        assert_eq!(page["pagination"]["page_size"], json!(size));
        pages.push(ids(&page));
        start = next_of(&page);
        if start.is_none() {
            return pages;
        }
    }
    panic!("the walk did not end")
}

async fn a_walk_returns_every_token_once_while_tokens_are_created(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let before = tagged(admin, 10, "w", "/general/").await;
    let filters = format!("metadata={}", metadata_json("w"));
    let first = admin.page(&format!("/v2/tokens?{filters}&size=3")).await;
    let mut seen = ids(&first);
    // Newest first: the first page is the three newest.
    let newest: Vec<String> = before.iter().rev().take(3).cloned().collect();
    assert_eq!(seen, newest);
    // Tokens created mid-walk (newer than its start) neither shift nor repeat it.
    let during = tagged(admin, 4, "w", "/general/").await;
    let mut start = next_of(&first).expect("more pages");
    let mut sizes = vec![seen.len()];
    loop {
        let page = admin
            .page(&format!("/v2/tokens?{filters}&size=3&start={start}"))
            .await;
        sizes.push(ids(&page).len());
        seen.extend(ids(&page));
        match next_of(&page) {
            Some(next) => start = next,
            None => break,
        }
    }
    assert_eq!(sizes, vec![3, 3, 3, 1], "no empty last page");
    let expected: Vec<String> = before.iter().rev().cloned().collect();
    assert_eq!(
        seen, expected,
        "each token that existed at the start, once, newest first"
    );
    assert!(during.iter().all(|id| !seen.contains(id)));
    // A new walk sees them all; the data is returned and each read is audited.
    let all: Vec<String> = walk_list(admin, &filters, 3).await.concat();
    assert_eq!(all.len(), 14);
    let page = admin.page(&format!("/v2/tokens?{filters}&size=1")).await;
    assert_eq!(page["data"][0]["data"], json!("w-3"));
    let audited = admin
        .page(&format!(
            "/audit-events?action=token.read&resource_id={}",
            during[3]
        ))
        .await;
    assert!(total(&audited).as_u64().expect("count") >= 1, "{audited}");
}

async fn a_search_walk_pages_like_the_list(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let tokens = tagged(admin, 7, "s", "/general/").await;
    tagged(admin, 2, "other", "/general/").await;
    let mut seen = vec![];
    let mut body = json!({"query": "metadata.walk:s", "size": 3});
    loop {
        let page = admin
            .post("/v2/tokens/search", body.clone())
            .await
            .expect(200)
            .body;
        assert!(ids(&page).len() <= 3);
        seen.extend(ids(&page));
        match next_of(&page) {
            Some(next) => body["start"] = json!(next),
            None => break,
        }
    }
    let expected: Vec<String> = tokens.iter().rev().cloned().collect();
    assert_eq!(seen, expected);
    // The list and the search with the same criteria walk the same tokens.
    let listed = walk_list(admin, &format!("metadata={}", metadata_json("s")), 3).await;
    assert_eq!(listed.concat(), expected);
}

async fn tampered_and_foreign_cursors_are_refused_alike(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    tagged(admin, 4, "t", "/general/").await;
    let first = admin.page("/v2/tokens?type=token&size=2").await;
    let cursor = next_of(&first).expect("a second page");
    admin
        .page(&format!("/v2/tokens?type=token&size=2&start={cursor}"))
        .await;
    let other_key = admin
        .app_key(json!({"name": "r", "type": "private", "permissions": ["token:read"]}))
        .await;
    let mut tampered = cursor.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");
    let (as_b, as_other) = (Caller::new(&app, &b.admin_key), admin.with_key(&other_key));
    let refusals = [
        (
            admin,
            format!("/v2/tokens?type=token&size=2&start={tampered}"),
        ),
        (admin, "/v2/tokens?type=token&start=AgAAAA==".to_string()),
        (as_b, format!("/v2/tokens?type=token&size=2&start={cursor}")),
        (
            as_other,
            format!("/v2/tokens?type=token&size=2&start={cursor}"),
        ),
        (admin, format!("/v2/tokens?type=card&size=2&start={cursor}")),
        (admin, format!("/v2/tokens?size=2&start={cursor}")),
    ];
    let mut details = vec![];
    for (caller, uri) in refusals {
        let r = caller.get(&uri).await.expect(400);
        assert_eq!(r.error_fields(), vec!["start"], "{uri}");
        details.push(r.body["errors"]["start"].clone());
    }
    let search = json!({"query": "type:card", "start": cursor});
    let r = admin.post("/v2/tokens/search", search).await.expect(400);
    details.push(r.body["errors"]["start"].clone());
    assert!(
        details.windows(2).all(|w| w[0] == w[1]),
        "one answer whatever is wrong: {details:?}"
    );
    // The same query as a search is the same walk: its cursor goes on there.
    let search = json!({"query": "type:token", "start": cursor, "size": 2});
    admin.post("/v2/tokens/search", search).await.expect(200);
}

async fn cursors_and_queries_never_reveal_unreadable_tokens(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let scoped = admin
        .app_key(json!({"name": "s", "type": "private", "rules": [
            {"priority": 1, "container": "/pci/secret/", "permissions": ["token:create"]},
            {"priority": 2, "container": "/pci/", "permissions": ["token:read"]}]}))
        .await;
    let scoped = admin.with_key(&scoped);
    // Readable and hidden tokens interleaved in time, hidden ones newest and oldest.
    let h0 = tagged(admin, 1, "x", "/pci/secret/").await;
    let r1 = tagged(admin, 1, "x", "/pci/a/").await;
    let h1 = tagged(admin, 2, "x", "/pci/secret/").await;
    let r2 = tagged(admin, 1, "x", "/pci/a/").await;
    let h2 = tagged(admin, 3, "x", "/pci/secret/").await;
    let readable = vec![r2[0].clone(), r1[0].clone()];
    let hidden = [h0, h1, h2].concat();
    // Size 2 over 2 readable tokens: one page and no cursor, whatever lies around them.
    let page = scoped.page("/v2/tokens?size=2").await;
    assert_eq!((ids(&page), next_of(&page)), (readable.clone(), None));
    // Size 1: two pages, each cursor skipping straight over the hidden tokens.
    let pages = walk_list(scoped, "type=token", 1).await;
    assert_eq!(
        pages,
        vec![vec![readable[0].clone()], vec![readable[1].clone()]]
    );
    for query in ["metadata.walk:x", "container:/pci/", "type:token"] {
        let body = json!({"query": query, "size": 2});
        let page = scoped
            .post("/v2/tokens/search", body)
            .await
            .expect(200)
            .body;
        assert_eq!(
            (ids(&page), next_of(&page)),
            (readable.clone(), None),
            "{query}"
        );
        let v1 = scoped
            .post("/tokens/search", json!({"query": query}))
            .await
            .expect(200)
            .body;
        assert_eq!(
            total(&v1),
            &json!(2),
            "{query}: hidden tokens are not counted"
        );
    }
    // A hidden token's id, or its container, answers as an id or container that holds
    // nothing: the same empty page.
    let nothing = json!({"pagination": {"page_size": 20, "next": null}, "data": []});
    let absent = uuid::Uuid::new_v4();
    for query in [
        format!("id:{}", hidden[0]),
        format!("id:{absent}"),
        "container:/pci/secret/".to_string(),
        "container:/pci/empty/".to_string(),
    ] {
        let page = scoped
            .post("/v2/tokens/search", json!({"query": query}))
            .await
            .expect(200)
            .body;
        assert_eq!(page, nothing, "{query}");
    }
    let nobody = admin
        .app_key(json!({"name": "n", "type": "private", "permissions": ["token:create"]}))
        .await;
    admin.with_key(&nobody).get("/v2/tokens").await.expect(403);
    let body = json!({"query": "type:token"});
    admin
        .with_key(&nobody)
        .post("/v2/tokens/search", body)
        .await
        .expect(403);
}

async fn a_query_searches_v1_and_v2_alike(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let card = json!({"type": "card", "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2031},
        "metadata": {"customer": "c 42"}, "containers": ["/pci/x/"]});
    let card = admin.create("/tokens", card).await;
    let fingerprint = admin.page(&format!("/tokens/{card}")).await["fingerprint"].clone();
    tagged(admin, 2, "q", "/pci/x/").await;
    for query in [
        "type:card AND metadata.customer:\"c 42\"".to_string(),
        format!("id:{card} and container:\"/pci/\""),
        format!(
            "fingerprint:{} AND type:card",
            fingerprint.as_str().expect("fp")
        ),
    ] {
        let v1 = admin
            .post("/tokens/search", json!({"query": query}))
            .await
            .expect(200)
            .body;
        assert_eq!(ids(&v1), vec![card.clone()], "v1 {query}");
        let v2 = admin
            .post("/v2/tokens/search", json!({"query": query}))
            .await
            .expect(200)
            .body;
        assert_eq!(ids(&v2), vec![card.clone()], "v2 {query}");
    }
    // v1: the query ANDs with creation times; a criterion it expresses itself, `start`, or
    // a term on another field is a 400 naming it.
    let later = json!({"query": "type:card", "created_after": "2999-01-01T00:00:00Z"});
    assert_eq!(
        total(&admin.post("/tokens/search", later).await.expect(200).body),
        &json!(0)
    );
    admin
        .refuses(
            "/tokens/search",
            json!({"query": "type:card", "type": ["card"]}),
            "query",
        )
        .await;
    admin
        .refuses(
            "/tokens/search",
            json!({"query": "type:card", "start": "x"}),
            "start",
        )
        .await;
    let r = admin
        .refuses(
            "/tokens/search",
            json!({"query": "enrichments:4242"}),
            "query",
        )
        .await;
    assert!(r.body["errors"]["query"][0]
        .as_str()
        .expect("message")
        .contains("enrichments:4242"));
    admin
        .post(
            "/tokens/search",
            json!({"query": "type:card", "start": null}),
        )
        .await
        .expect(200);
}

async fn v2_requests_are_validated(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let long = format!("/v2/tokens?start={}", "A".repeat(600));
    for (uri, field) in [
        ("/v2/tokens?size=0", "size"),
        ("/v2/tokens?size=101", "size"),
        ("/v2/tokens?page=2", "page"),
        ("/v2/tokens?metadata=not-json", "metadata"),
        ("/v2/tokens?container=pci", "container"),
        (long.as_str(), "start"),
    ] {
        let r = admin.get(uri).await.expect(400);
        assert_eq!(r.error_fields(), vec![field], "{uri}");
    }
    for (body, field) in [
        (json!({"query": "type:card OR type:bank"}), "query"),
        (json!({"query": "metadata.k:ab*"}), "query"),
        (json!({"query": "x".repeat(9000)}), "query"),
        (json!({"size": 1000}), "size"),
        (json!({"page": 1}), "page"),
    ] {
        admin.refuses("/v2/tokens/search", body, field).await;
    }
    // An empty `start` is the first page; a trailing slash, as basis-theory-js sends it,
    // answers the same.
    admin.page("/v2/tokens?start=&size=1").await;
    admin
        .post("/v2/tokens/search", json!({"start": "", "size": 1}))
        .await
        .expect(200);
    admin.page("/v2/tokens/?size=1").await;
    assert_eq!(admin.page("/v2/tokens").await["data"], json!([]));
}
