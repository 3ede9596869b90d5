//! Transforms (docs/api.md, "Transforms"), on both backends: what each answer carrying token
//! data shows under `reveal`, `mask` and `redact`, given by rules and by the deployment's
//! implicit transform; `token:search`; and what a mask reader cannot learn by another route
//! (fingerprints, deduplication, `data:` and `fingerprint:` terms, bindings, escalation).

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    Error,
};
use serde_json::{json, Value};
use tessera_domain::DataTransform;
use tessera_testkit::{
    api::{state_implicit, tenant, Caller},
    backend_tests,
    db::TestDatabase,
};

use crate::caller::{id_of, one_tenant, serve, ManagementApi, MIB};

backend_tests!(
    rules_decide_what_every_answer_shows,
    the_implicit_transform_decides_for_plain_permissions,
    token_search_searches_without_reading_by_id,
    a_mask_reader_cannot_test_guesses,
    no_key_grants_a_transform_showing_more_than_its_own,
    rules_carry_their_transform_and_refuse_unknown_ones,
    a_tokens_own_mask_is_what_mask_readers_see,
    only_a_revealer_changes_a_mask_and_whole_fields_are_audited,
);

const NUMBER: &str = "4242424242424242";

fn card() -> Value {
    json!({"number": NUMBER, "expiration_month": 12, "expiration_year": 2030, "cvc": "123"})
}

fn masked_card() -> Value {
    json!({"number": "XXXXXXXXXXXX4242", "expiration_month": 12, "expiration_year": 2030})
}

/// A key with create, read, search and update on `/pci/` under `transform`.
async fn ruled_key<S, B>(admin: Caller<'_, S>, transform: &str) -> String
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    admin
        .app_key(json!({"name": transform, "type": "private", "rules": [{
            "priority": 1, "container": "/pci/", "transform": transform,
            "permissions": ["token:create", "token:read", "token:search", "token:update"]}]}))
        .await
}

/// What an answer's `data` should be under `transform`: the plaintext, the mask, or absent.
fn expected(transform: &str, plain: &Value, mask: &Value) -> Option<Value> {
    match transform {
        "reveal" => Some(plain.clone()),
        "mask" => Some(mask.clone()),
        _ => None,
    }
}

/// The `data` of the item `id` in a page's `data` array.
fn item_data(page: &Value, id: &str) -> Option<Value> {
    page["data"]
        .as_array()
        .and_then(|items| items.iter().find(|t| t["id"] == json!(id)))
        .unwrap_or_else(|| panic!("{id} not in {page}"))
        .get("data")
        .cloned()
}

/// Every reading route as `caller`: what each showed of token `id` (child of `parent`).
async fn reads<S, B>(caller: Caller<'_, S>, id: &str, parent: &str) -> Vec<(&'static str, Value)>
where
    S: ManagementApi<B>,
    B: MessageBody,
{
    let get = caller.get(&format!("/tokens/{id}")).await.expect(200).body;
    let list = caller.page("/tokens").await;
    let children = caller.page(&format!("/tokens/{parent}/children")).await;
    let search = json!({"query": format!("id:{id}"), "include_data": true});
    let search = caller.post("/tokens/search", search).await.expect(200).body;
    let search_v2 = json!({"query": format!("id:{id}")});
    let search_v2 = caller
        .post("/v2/tokens/search", search_v2)
        .await
        .expect(200)
        .body;
    let list_v2 = caller.get("/v2/tokens").await.expect(200).body;
    let detokenized = json!({"whole": format!("{{{{ {id} }}}}")});
    let detokenized = caller
        .post("/detokenize", detokenized)
        .await
        .expect(200)
        .body;
    let none = Value::String("<absent>".into());
    let shown = |v: Option<Value>| v.unwrap_or_else(|| none.clone());
    vec![
        ("get", shown(get.get("data").cloned())),
        ("list", shown(item_data(&list, id))),
        ("children", shown(item_data(&children, id))),
        ("search", shown(item_data(&search, id))),
        ("search v2", shown(item_data(&search_v2, id))),
        ("list v2", shown(item_data(&list_v2, id))),
        (
            "detokenize",
            shown(Some(detokenized["whole"].clone()).filter(|v| !v.is_null())),
        ),
    ]
}

async fn rules_decide_what_every_answer_shows(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let parent = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": "p", "containers": ["/pci/"]}),
        )
        .await;
    let child = admin
        .post(
            &format!("/tokens/{parent}/children"),
            json!({"type": "card", "data": card(), "containers": ["/pci/high/"]}),
        )
        .await
        .expect(201);
    assert!(
        child.body.get("data").is_none(),
        "a child's create answer has no data"
    );
    let id = id_of(&child.body);
    for transform in ["reveal", "mask", "redact"] {
        let key = ruled_key(admin, transform).await;
        let caller = admin.with_key(&key);
        let want = expected(transform, &card(), &masked_card())
            .unwrap_or_else(|| Value::String("<absent>".into()));
        for (route, shown) in reads(caller, &id, &parent).await {
            assert_eq!(shown, want, "{transform}: {route}");
        }
        let read = caller.get(&format!("/tokens/{id}")).await.expect(200).body;
        assert_eq!(
            read.get("fingerprint").is_some(),
            transform == "reveal",
            "{transform}: the fingerprint goes with the plaintext only"
        );
        // Writes' answers: the mask under `mask`, never the plaintext.
        let updated = caller
            .patch(
                &format!("/tokens/{id}"),
                json!({"metadata": {"by": transform}}),
            )
            .await
            .expect(200)
            .body;
        let created = caller
            .post(
                "/tokens",
                json!({"type": "card", "data": card(), "containers": ["/pci/x/"]}),
            )
            .await
            .expect(201)
            .body;
        let on_write = (transform == "mask").then(masked_card);
        assert_eq!(
            updated.get("data").cloned(),
            on_write,
            "{transform}: update"
        );
        assert_eq!(
            created.get("data").cloned(),
            on_write,
            "{transform}: create"
        );
        assert_eq!(
            created.get("card").is_some(),
            transform != "redact",
            "{transform}: the card's display fields"
        );
    }
}

async fn the_implicit_transform_decides_for_plain_permissions(db: &TestDatabase) {
    for (implicit, shown) in [
        (DataTransform::Reveal, Some(json!(NUMBER))),
        (DataTransform::Mask, Some(json!("XXXXXXXXXXXX4242"))),
    ] {
        let st = state_implicit(db, MIB, implicit);
        let t = tenant(&st, &format!("implicit-{implicit}")).await;
        let app = serve(st).await;
        let admin = Caller::new(&app, &t.admin_key);
        let reader = admin
            .app_key(json!({"name": "r", "type": "private",
                "permissions": ["token:create", "token:read"]}))
            .await;
        let reader = admin.with_key(&reader);
        let number = reader
            .post("/tokens", json!({"type": "card_number", "data": NUMBER}))
            .await
            .expect(201)
            .body;
        let on_create = (implicit == DataTransform::Mask).then(|| json!("XXXXXXXXXXXX4242"));
        assert_eq!(number.get("data").cloned(), on_create, "{implicit}: create");
        let id = id_of(&number);
        let read = reader.get(&format!("/tokens/{id}")).await.expect(200).body;
        assert_eq!(read.get("data").cloned(), shown, "{implicit}: read");
        // A `token` has no mask: masked, it shows no data.
        let plain = reader
            .create("/tokens", json!({"type": "token", "data": "secret"}))
            .await;
        let read = reader
            .get(&format!("/tokens/{plain}"))
            .await
            .expect(200)
            .body;
        let want = (implicit == DataTransform::Reveal).then(|| json!("secret"));
        assert_eq!(read.get("data").cloned(), want, "{implicit}: a token");
        // Every reading route, for permissions granted without rules.
        let parent = reader
            .create("/tokens", json!({"type": "token", "data": "p"}))
            .await;
        let child = admin
            .post(
                &format!("/tokens/{parent}/children"),
                json!({"type": "card_number", "data": NUMBER}),
            )
            .await
            .expect(201)
            .body;
        let want = shown
            .clone()
            .unwrap_or_else(|| Value::String("<absent>".into()));
        for (route, got) in reads(reader, &id_of(&child), &parent).await {
            assert_eq!(got, want, "{implicit}: {route}");
        }
        // Rules carry their own transform whatever the setting.
        let revealer = ruled_key(admin, "reveal").await;
        let created = admin
            .create(
                "/tokens",
                json!({"type": "card", "data": card(), "containers": ["/pci/"]}),
            )
            .await;
        let read = admin
            .with_key(&revealer)
            .get(&format!("/tokens/{created}"))
            .await
            .expect(200)
            .body;
        assert_eq!(read["data"], card(), "{implicit}: a reveal rule");
    }
}

async fn token_search_searches_without_reading_by_id(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": "x", "metadata": {"k": "v"}}),
        )
        .await;
    let searcher = admin
        .app_key(json!({"name": "s", "type": "private", "permissions": ["token:search"]}))
        .await;
    let searcher = admin.with_key(&searcher);
    let found = searcher
        .post(
            "/tokens/search",
            json!({"query": "metadata.k:v", "include_data": true}),
        )
        .await
        .expect(200)
        .body;
    assert_eq!(found["data"][0]["id"], json!(id));
    assert_eq!(found["data"][0]["data"], json!("x"));
    let found = searcher
        .post("/v2/tokens/search", json!({"query": "metadata.k:v"}))
        .await
        .expect(200)
        .body;
    assert_eq!(found["data"][0]["id"], json!(id));
    searcher.get(&format!("/tokens/{id}")).await.expect(403);
    searcher.get("/tokens").await.expect(403);
    searcher.get("/v2/tokens").await.expect(403);
    // The bootstrap admin holds every permission, token:search among them.
    let granted = admin
        .post(
            "/applications",
            json!({"name": "s2", "type": "private", "permissions": ["token:search"]}),
        )
        .await
        .expect(201)
        .body;
    assert_eq!(granted["permissions"], json!(["token:search"]));
}

async fn a_mask_reader_cannot_test_guesses(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin
        .create(
            "/tokens",
            json!({"type": "card_number", "data": NUMBER, "containers": ["/pci/"]}),
        )
        .await;
    let masker = ruled_key(admin, "mask").await;
    let masker = admin.with_key(&masker);
    // Deduplication would say whether a guess is stored.
    let guess = json!({"type": "card_number", "data": NUMBER, "containers": ["/pci/"],
        "deduplicate_token": true});
    masker.post("/tokens", guess).await.expect(403);
    // So would `data:` and `fingerprint:` terms.
    let fingerprint =
        admin.get(&format!("/tokens/{id}")).await.expect(200).body["fingerprint"].clone();
    for query in [
        format!("data:{NUMBER}"),
        format!("fingerprint:{}", fingerprint.as_str().unwrap_or_default()),
    ] {
        masker
            .post("/tokens/search", json!({"query": query}))
            .await
            .expect(403);
        masker
            .post("/v2/tokens/search", json!({"query": query}))
            .await
            .expect(403);
    }
    // Rendering new search indexes over its data would let a `data:` term test guesses, and a
    // fingerprint expression would fingerprint them.
    for templates in [
        json!({"search_indexes": ["{{ data }}"]}),
        json!({"fingerprint_expression": "{{ data | slice: 0, 12 }}"}),
    ] {
        masker
            .patch(&format!("/tokens/{id}"), templates)
            .await
            .expect(403);
    }
    // Binding the token to a host of its choosing would send the plaintext there.
    masker
        .patch(
            &format!("/tokens/{id}"),
            json!({"destinations": ["attacker.example"]}),
        )
        .await
        .expect(403);
    // The refusals name no data.
    let refused = masker
        .post("/tokens/search", json!({"query": format!("data:{NUMBER}")}))
        .await;
    let text = String::from_utf8_lossy(&refused.raw).to_string();
    assert!(!text.contains("4242"), "{text}");
}

async fn no_key_grants_a_transform_showing_more_than_its_own(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let spec = |transform: &str| {
        json!({"name": format!("x-{transform}"), "type": "private", "rules": [{
            "priority": 1, "container": "/pci/", "transform": transform,
            "permissions": ["token:read"]}]})
    };
    // A management key holds no token permission, so it grants no rule whatever its
    // transform (a ceiling below the grant's is pinned in tessera-domain's access tests).
    let granter = admin
        .app_key(json!({"name": "g", "type": "management",
            "permissions": ["application:create", "application:read"]}))
        .await;
    for transform in ["reveal", "mask", "redact"] {
        admin
            .with_key(&granter)
            .post("/applications", spec(transform))
            .await
            .expect(403);
    }
    // The bootstrap admin's permissions come without rules: any transform, whatever the
    // implicit one.
    for implicit in [DataTransform::Reveal, DataTransform::Mask] {
        let st = state_implicit(db, MIB, implicit);
        let t = tenant(&st, &format!("grants-{implicit}")).await;
        let app = serve(st).await;
        let admin = Caller::new(&app, &t.admin_key);
        for transform in ["reveal", "mask", "redact"] {
            admin
                .post("/applications", spec(transform))
                .await
                .expect(201);
        }
    }
}

async fn rules_carry_their_transform_and_refuse_unknown_ones(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let rule = |transform: Option<&str>| {
        let mut rule = json!({"priority": 1, "container": "/pci/", "permissions": ["token:read"]});
        if let Some(t) = transform {
            rule["transform"] = json!(t);
        }
        json!({"name": "r", "type": "private", "rules": [rule]})
    };
    let created = admin
        .post("/applications", rule(Some("mask")))
        .await
        .expect(201);
    assert_eq!(created.body["rules"][0]["transform"], json!("mask"));
    let unnamed = admin.post("/applications", rule(None)).await.expect(201);
    assert_eq!(
        unnamed.body["rules"][0]["transform"],
        json!("reveal"),
        "a rule naming no transform reveals, as rules always did"
    );
    let id = id_of(&created.body);
    let read = admin.get(&format!("/applications/{id}")).await.expect(200);
    assert_eq!(read.body["rules"][0]["transform"], json!("mask"));
    admin
        .refuses("/applications", rule(Some("show")), "rules[0].transform")
        .await;
}

fn person() -> Value {
    json!({"name": {"first": "John", "last": "Doe"}, "ssn": "123-45-6789"})
}

fn person_mask() -> Value {
    json!({"name": {"first": "{{ data.name.first }}"}, "ssn": "{{ data.ssn | reveal_last: 4 }}",
        "kind": "person"})
}

async fn a_tokens_own_mask_is_what_mask_readers_see(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let created = admin
        .post(
            "/tokens",
            json!({"type": "token", "data": person(), "mask": person_mask(),
            "containers": ["/pci/"]}),
        )
        .await
        .expect(201)
        .body;
    let id = id_of(&created);
    assert_eq!(
        created["mask"],
        person_mask(),
        "a revealer's answer shows the mask as stored"
    );
    let shown = json!({"name": {"first": "John"}, "ssn": "XXX-XX-6789", "kind": "person"});
    for (transform, data) in [
        ("reveal", Some(person())),
        ("mask", Some(shown.clone())),
        ("redact", None),
    ] {
        let key = ruled_key(admin, transform).await;
        let caller = admin.with_key(&key);
        let read = caller.get(&format!("/tokens/{id}")).await.expect(200).body;
        assert_eq!(read.get("data").cloned(), data, "{transform}");
        assert_eq!(
            read.get("mask").is_some(),
            transform == "reveal",
            "{transform}: the mask itself only beside the plaintext"
        );
        let listed = caller.page("/tokens").await;
        let want = data
            .clone()
            .unwrap_or_else(|| Value::String("<absent>".into()));
        assert_eq!(
            item_data(&listed, &id).unwrap_or_else(|| Value::String("<absent>".into())),
            want,
            "{transform}: list"
        );
    }
    // Checked over the data it is given: a filter that does not apply is a 400 naming it.
    admin
        .refuses(
            "/tokens",
            json!({"type": "token", "data": person(), "mask": {"x": "{{ data.name | reveal_last: 4 }}"}}),
            "mask.x",
        )
        .await;
    // Sealed: a copy of the database holds neither the template nor what it shows.
    let stored = db.stored_bytes().await;
    for plain in [&b"reveal_last"[..], b"John"] {
        assert!(
            !stored.windows(plain.len()).any(|w| w == plain),
            "{}",
            String::from_utf8_lossy(plain)
        );
    }
}

async fn only_a_revealer_changes_a_mask_and_whole_fields_are_audited(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": person(), "mask": person_mask(),
            "containers": ["/pci/"]}),
        )
        .await;
    // A key that may update and read masks would otherwise choose a mask showing everything.
    let masker = ruled_key(admin, "mask").await;
    let masker = admin.with_key(&masker);
    let widen = json!({"mask": {"ssn": "{{ data.ssn }}"}});
    masker
        .patch(&format!("/tokens/{id}"), widen.clone())
        .await
        .expect(403);
    let read = masker.get(&format!("/tokens/{id}")).await.expect(200).body;
    assert_eq!(read["data"]["ssn"], json!("XXX-XX-6789"), "unchanged");
    // Its own data with a whole-field mask: allowed on create, and written down.
    let created = masker
        .post(
            "/tokens",
            json!({"type": "token", "data": person(),
            "mask": {"ssn": "{{ data.ssn }}"}, "containers": ["/pci/"]}),
        )
        .await
        .expect(201)
        .body;
    assert_eq!(
        created["data"],
        json!({"ssn": "123-45-6789"}),
        "the mask, as written"
    );
    // An admin changes it (merged into the mask as a JSON merge patch), and the event says
    // which field it shows whole.
    admin
        .patch(&format!("/tokens/{id}"), widen)
        .await
        .expect(200);
    let read = masker.get(&format!("/tokens/{id}")).await.expect(200).body;
    assert_eq!(
        read["data"],
        json!({"name": {"first": "John"}, "ssn": "123-45-6789", "kind": "person"})
    );
    assert_eq!(
        newest_reason(&admin, &id, "token.updated").await,
        json!("mask shows whole: data.name.first, data.ssn")
    );
    assert_eq!(
        newest_reason(&admin, &id_of(&created), "token.created").await,
        json!("mask shows whole: data.ssn")
    );
    a_mask_merges_as_a_json_merge_patch(&admin, &masker, &id).await;
}

/// The `reason` of the newest `action` event naming `id`.
async fn newest_reason<S, B>(admin: &Caller<'_, S>, id: &str, action: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let events = admin
        .get(&format!("/audit-events?resource_id={id}&action={action}"))
        .await
        .expect(200)
        .body;
    events["data"][0]["reason"].clone()
}

/// Members set to `null` leave the mask; `null` itself goes back to the type's.
async fn a_mask_merges_as_a_json_merge_patch<S, B>(
    admin: &Caller<'_, S>,
    masker: &Caller<'_, S>,
    id: &str,
) where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    admin
        .patch(
            &format!("/tokens/{id}"),
            json!({"mask": {"kind": null, "name": null}}),
        )
        .await
        .expect(200);
    let read = masker.get(&format!("/tokens/{id}")).await.expect(200).body;
    assert_eq!(
        read["data"],
        json!({"ssn": "123-45-6789"}),
        "members set to null removed"
    );
    // `null` goes back to the type's mask: a `token` has none, so a mask reader sees no data.
    admin
        .patch(&format!("/tokens/{id}"), json!({"mask": null}))
        .await
        .expect(200);
    let read = masker.get(&format!("/tokens/{id}")).await.expect(200).body;
    assert!(read.get("data").is_none(), "{read}");
}
