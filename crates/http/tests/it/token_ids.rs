//! Token ids beyond UUIDs (docs/api.md, "Token ids"), on both backends: ids a caller chose in
//! another vault (`1234_phone`, an e-mail address, accented text, all digits) and ids drawn
//! from alias templates, through every route that names a token, in list filters, search
//! terms, cursors, associations, `/detokenize` and proxy expressions; a taken id is a 409
//! naming it; a public key may choose neither.

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    test, Error,
};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use tessera_testkit::{
    api::private_state, api::Caller, backend_tests, db::TestDatabase, upstream::Upstream,
};

use crate::caller::{id_of, ids, proxy_to, two_tenants, with_gateway};

backend_tests!(
    chosen_ids_work_through_every_route,
    cursors_and_searches_walk_chosen_ids,
    alias_templates_draw_ids_from_the_data,
    a_taken_id_is_a_409_naming_it,
    public_keys_choose_neither_ids_nor_templates,
    proxy_expressions_name_chosen_ids_and_apply_filters,
);

/// Ids as teams bring them from Basis Theory.
const IDS: [&str; 5] = [
    "1234_phone",
    "k7dn59wb@gmail.com",
    "caf\u{e9}-\u{1F600}-id",
    "it's:fine!$*",
    "9273610263384242",
];

/// `id` as it sits in a URL path.
fn path(id: &str) -> String {
    utf8_percent_encode(id, NON_ALPHANUMERIC).to_string()
}

async fn chosen_ids_work_through_every_route(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    for id in IDS {
        let created = admin
            .post(
                "/tokens",
                json!({"id": id, "type": "token", "data": format!("data of {id}")}),
            )
            .await
            .expect(201);
        assert_eq!(id_of(&created.body), id);
        let uri = format!("/tokens/{}", path(id));
        let read = admin.get(&uri).await.expect(200).body;
        assert_eq!(read["id"], json!(id));
        assert_eq!(read["data"], json!(format!("data of {id}")));
        let patched = admin
            .merge_patch(&uri, &json!({"metadata": {"k": "v"}}))
            .await
            .expect(200);
        assert_eq!(patched.body["metadata"], json!({"k": "v"}));
        let listed = admin.page(&format!("/tokens?id={}", path(id))).await;
        assert_eq!(ids(&listed), vec![id.to_string()]);
        let detok = admin
            .post("/detokenize", json!({"v": format!("{{{{ {id} }}}}")}))
            .await
            .expect(200);
        assert_eq!(detok.body["v"], json!(format!("data of {id}")));
        let audit = admin
            .page(&format!("/audit-events?resource_id={}", path(id)))
            .await;
        assert!(
            audit["data"].as_array().is_some_and(|e| !e.is_empty()),
            "{id}: {audit}"
        );
    }
    // Parents and children by chosen ids: created under, linked, listed, unlinked.
    let (parent, other) = (path(IDS[0]), path(IDS[1]));
    let child = admin
        .post(
            &format!("/tokens/{parent}/children"),
            json!({"id": "child_of_phone", "type": "token", "data": "c"}),
        )
        .await
        .expect(201);
    assert_eq!(id_of(&child.body), "child_of_phone");
    admin
        .post_empty(&format!("/tokens/{parent}/children/{other}"))
        .await
        .expect(204);
    let children = admin.page(&format!("/tokens/{parent}/children")).await;
    let mut listed = ids(&children);
    listed.sort();
    assert_eq!(
        listed,
        vec!["child_of_phone".to_string(), IDS[1].to_string()]
    );
    admin
        .delete(&format!("/tokens/{parent}/children/{other}"))
        .await
        .expect(204);
    for id in IDS {
        admin
            .delete(&format!("/tokens/{}", path(id)))
            .await
            .expect(204);
        admin
            .get(&format!("/tokens/{}", path(id)))
            .await
            .expect(404);
    }
}

async fn cursors_and_searches_walk_chosen_ids(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    for id in IDS {
        admin
            .post(
                "/tokens",
                json!({"id": id, "type": "token", "data": "x", "metadata": {"batch": "b1"}}),
            )
            .await
            .expect(201);
    }
    // A walk one token a page: every cursor holds a chosen id.
    let mut seen = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let uri = match &start {
            Some(s) => format!("/v2/tokens?size=1&start={}", path(s)),
            None => "/v2/tokens?size=1".to_string(),
        };
        let page = admin.get(&uri).await.expect(200).body;
        seen.extend(ids(&page));
        match page["pagination"]["next"].as_str() {
            Some(next) => start = Some(next.to_string()),
            None => break,
        }
    }
    seen.sort();
    let mut expected: Vec<String> = IDS.iter().map(ToString::to_string).collect();
    expected.sort();
    assert_eq!(seen, expected);
    // `id:` terms and the ids filter of both searches.
    for id in ["1234_phone", "k7dn59wb@gmail.com"] {
        let found = admin
            .post(
                "/tokens/search",
                json!({"query": format!("id:\"{id}\" AND metadata.batch:b1")}),
            )
            .await
            .expect(200);
        assert_eq!(ids(&found.body), vec![id.to_string()]);
        let v2 = admin
            .post(
                "/v2/tokens/search",
                json!({"query": format!("id:\"{id}\"")}),
            )
            .await
            .expect(200);
        assert_eq!(ids(&v2.body), vec![id.to_string()]);
    }
}

async fn alias_templates_draw_ids_from_the_data(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let ssn = admin
        .post(
            "/tokens",
            json!({"id": "{{ data | alias_preserve_format: 0, 4 }}", "type": "token", "data": "111-22-3333"}),
        )
        .await
        .expect(201);
    let id = id_of(&ssn.body);
    assert!(
        id.ends_with("-3333") && id.len() == 11 && &id[3..4] == "-",
        "{id}"
    );
    assert_ne!(id, "111-22-3333");
    let read = admin
        .get(&format!("/tokens/{}", path(&id)))
        .await
        .expect(200);
    assert_eq!(read.body["data"], json!("111-22-3333"));
    let card =
        json!({"number": "4242424242424242", "expiration_month": 3, "expiration_year": 2031});
    let created = admin
        .post(
            "/tokens",
            json!({"id": "{{ data.number | alias_card: true, true }}", "type": "card", "data": card}),
        )
        .await
        .expect(201);
    let alias = id_of(&created.body);
    assert!(
        alias.starts_with("42424242") && alias.ends_with("4242") && alias.len() == 16,
        "{alias}"
    );
    a_taken_alias_is_drawn_again_as_a_uuid(&admin).await;
    a_template_without_a_valid_id_stores_nothing(&admin).await;
    // Aliased tokens are recorded under the id they got.
    let events = admin
        .page(&format!(
            "/audit-events?action=token.created&resource_id={}",
            path(&id)
        ))
        .await;
    assert_eq!(events["pagination"]["total_items"], json!(1));
}

/// A template that always draws the same id: once taken, later tokens get random UUIDs, in
/// one request as across requests.
async fn a_taken_alias_is_drawn_again_as_a_uuid<S, B>(admin: &Caller<'_, S>)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let fixed =
        json!({"id": "{{ data | reveal_last: 4 }}", "type": "token", "data": "123-45-6789"});
    let first = admin.post("/tokens", fixed.clone()).await.expect(201);
    assert_eq!(id_of(&first.body), "XXX-XX-6789");
    let again = admin.post("/tokens", fixed.clone()).await.expect(201);
    assert!(
        id_of(&again.body).parse::<uuid::Uuid>().is_ok(),
        "{}",
        again.body
    );
    let both = admin
        .post("/tokenize", json!([fixed, fixed]))
        .await
        .expect(201);
    let drawn: Vec<String> = both
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(id_of)
        .collect();
    assert!(
        drawn.iter().all(|id| id.parse::<uuid::Uuid>().is_ok()),
        "{drawn:?}"
    );
    assert_ne!(drawn[0], drawn[1]);
}

/// A template that renders no valid id is a 400 on `id`, and stores nothing.
async fn a_template_without_a_valid_id_stores_nothing<S, B>(admin: &Caller<'_, S>)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let before = admin.total("/tokens").await;
    for (template, data) in [
        ("{{ data.missing }}", json!({})),
        ("{{ data | card_exp: 'MM' }}", json!("x")),
        ("{{ data }}", json!("a/b")),
    ] {
        admin
            .refuses(
                "/tokens",
                json!({"id": template, "type": "token", "data": data}),
                "id",
            )
            .await;
    }
    assert_eq!(admin.total("/tokens").await, before);
}

async fn a_taken_id_is_a_409_naming_it(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let (in_a, in_b) = (
        Caller::new(&app, &a.admin_key),
        Caller::new(&app, &b.admin_key),
    );
    let token = |id: &str| json!({"id": id, "type": "token", "data": "x"});
    in_a.post("/tokens", token("1234_phone")).await.expect(201);
    let again = in_a.post("/tokens", token("1234_phone")).await.expect(409);
    assert!(
        again.body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("1234_phone")),
        "{}",
        again.body
    );
    let bulk = in_a
        .post(
            "/tokenize",
            json!([token("fresh_one"), token("1234_phone")]),
        )
        .await
        .expect(409);
    let detail = bulk.body["detail"].as_str().expect("detail");
    assert!(
        detail.contains("1234_phone") && detail.contains("[1].id"),
        "{detail}"
    );
    assert_eq!(bulk.error_fields(), vec!["[1].id".to_string()]);
    in_a.get("/tokens/fresh_one").await.expect(404);
    // Every taken id of a request is named at once.
    in_a.post("/tokens", token("second_taken"))
        .await
        .expect(201);
    let two = in_a
        .post(
            "/tokenize",
            json!([
                token("second_taken"),
                token("fresh_two"),
                token("1234_phone")
            ]),
        )
        .await
        .expect(409);
    assert_eq!(
        two.error_fields(),
        vec!["[0].id".to_string(), "[2].id".to_string()]
    );
    // Another tenant holds its own: same id, no conflict, no sign of the first.
    in_b.post("/tokens", token("1234_phone")).await.expect(201);
    in_b.get("/tokens/1234_phone").await.expect(200);
    // A child with a taken id, likewise.
    let parent = in_a
        .create("/tokens", json!({"type": "token", "data": "p"}))
        .await;
    let child = in_a
        .post(&format!("/tokens/{parent}/children"), token("1234_phone"))
        .await
        .expect(409);
    assert!(child.body["detail"]
        .as_str()
        .is_some_and(|d| d.contains("1234_phone")));
}

async fn public_keys_choose_neither_ids_nor_templates(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let public = admin
        .app_key(json!({"name": "web", "type": "public", "permissions": ["token:create"]}))
        .await;
    let public = admin.with_key(&public);
    // Refused before anything is validated or rendered: a template that would not apply, an
    // id that is not one, and bulk requests holding either are a 403, not a 400.
    for id in [
        "1234_phone",
        "{{ data | alias_preserve_format: 0, 4 }}",
        "{{ data | card_exp: 'MM' }}",
        "x",
    ] {
        public
            .post(
                "/tokens",
                json!({"id": id, "type": "token", "data": "111-22-3333"}),
            )
            .await
            .expect(403);
        public
            .post(
                "/tokenize",
                json!([{"type": "token", "data": "a"}, {"id": id, "type": "token", "data": "b"}]),
            )
            .await
            .expect(403);
    }
    assert_eq!(admin.total("/tokens").await, json!(0));
}

async fn proxy_expressions_name_chosen_ids_and_apply_filters(db: &TestDatabase) {
    let (st, t, admin) = private_state(db).await;
    let upstream = Upstream::start(None).await;
    let key = proxy_to(&st, &admin, &upstream, json!({"require_auth": true})).await;
    let app = with_gateway(st).await;
    let caller = Caller::new(&app, &t.admin_key);
    let card =
        json!({"number": "4242424242424242", "expiration_month": 3, "expiration_year": 2031});
    caller
        .post(
            "/tokens",
            json!({"id": "card_of_c42", "type": "card", "data": card}),
        )
        .await
        .expect(201);
    caller
        .post(
            "/tokens",
            json!({"id": "k7dn59wb@gmail.com", "type": "token", "data": "123-45-6789"}),
        )
        .await
        .expect(201);
    let body = json!({
        "number": "{{ card_of_c42 | json: '$.number' }}",
        "month": "{{ token: card_of_c42 | json: '$.data.expiration_month' | pad_left: 2, '0' }}",
        "year": "{{ card_of_c42 | json: '$.expiration_year' | to_string | slice: -2, 2 }}",
        "exp": "{{ card_of_c42 | card_exp: 'MM/YY' }}",
        "ssn": "{{ k7dn59wb@gmail.com | reveal_last: 4 }}",
    });
    let req = test::TestRequest::post()
        .uri("/proxy")
        .insert_header(("svc-proxy-key", key.as_str()))
        .insert_header(("svc-api-key", t.admin_key.as_str()))
        .set_json(body);
    let res = test::call_service(&app, req.to_request()).await;
    assert_eq!(res.status(), 200);
    let sent: Value = serde_json::from_str(&upstream.last_body()).expect("json");
    assert_eq!(
        sent,
        json!({"number": "4242424242424242", "month": "03", "year": "31", "exp": "03/31", "ssn": "XXX-XX-6789"})
    );
}
