//! Token lifecycle through the API, on both backends: merge-patch updates and
//! immutables, expiry and the sweep, fingerprints, deduplication, `Idempotency-Key`, bulk
//! creation and search — and that none of them ever reaches another tenant.

use std::time::Duration;

use crate::caller::MIB;
use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    test, Error,
};
use serde_json::{json, Value};
use tessera_domain::{store::TokenRecords, TokenId};
use tessera_testkit::api::{app_key, app_with_tenant, send_raw, state, tenant, Caller, Reply};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    patch_merges_metadata_and_replaces_data,
    patch_refuses_immutables_and_invalid_values,
    patch_needs_token_update_and_stays_in_the_tenant,
    expired_tokens_vanish_everywhere,
    the_sweep_deletes_expired_tokens_and_their_links,
    fingerprints_are_equal_for_equal_data_within_a_tenant_only,
    deduplication_answers_the_existing_token,
    an_idempotency_key_replays_the_first_answer_and_refuses_another_request,
    idempotency_keys_belong_to_one_application,
    a_failed_request_is_not_remembered_and_malformed_keys_are_refused,
    a_replayed_application_keeps_its_key_sealed,
    bulk_and_child_creation_honour_idempotency_keys,
    one_idempotency_key_sent_twenty_times_at_once_creates_one_token,
    bulk_tokenize_is_ordered,
    bulk_tokenize_is_all_or_nothing,
    bulk_tokenize_deduplicates_against_stored_tokens_and_earlier_elements,
    search_combines_filters_and_pages_newest_first,
    search_refuses_invalid_filters,
    search_narrows_by_permission_and_tenant,
);

const CARD: &str = "4242424242424242";
const OTHER_CARD: &str = "5555555555554444";

/// `POST` with a JSON body and an optional `Idempotency-Key`.
async fn post<S, B>(app: &S, key: &str, path: &str, body: Value, idem: Option<&str>) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    match idem {
        Some(idem) => Caller::new(app, key).post_once(path, &body, idem).await,
        None => Caller::new(app, key).post(path, body).await,
    }
}

/// `PATCH /tokens/{id}` with `application/merge-patch+json`.
async fn patch<S, B>(app: &S, key: &str, id: &str, body: Value) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    Caller::new(app, key)
        .merge_patch(&format!("/tokens/{id}"), &body)
        .await
}

async fn create<S, B>(app: &S, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    post(app, key, "/tokens", body, None).await.expect(201).body
}

async fn get<S, B>(app: &S, key: &str, path: &str) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    Caller::new(app, key).get(path).await
}

/// How many items the list at `path` counts.
async fn total<S, B>(app: &S, key: &str, path: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    get(app, key, path).await.expect(200).body["pagination"]["total_items"].clone()
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("id").to_string()
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(id)
        .collect()
}

fn card(number: &str) -> Value {
    json!({"type": "card", "data": {"number": number, "expiration_month": 12, "expiration_year": 2030}})
}

/// RFC 3339 `secs` seconds from now (negative: in the past).
fn in_secs(secs: f64) -> String {
    let at = time::OffsetDateTime::now_utc() + time::Duration::seconds_f64(secs);
    at.format(&time::format_description::well_known::Rfc3339)
        .expect("format")
}

/// A key allowed `permission` under `/pci/` only.
fn pci_only(permission: &str) -> Value {
    json!({"name": "p", "type": "private", "permissions": [],
        "rules": [{"description": "pci", "priority": 1, "container": "/pci/", "permissions": [permission]}]})
}

async fn patch_merges_metadata_and_replaces_data(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let k = t.admin_key.as_str();
    let mut body = card(CARD);
    body["metadata"] = json!({"a": "1", "b": "2"});
    let created = create(&app, k, body).await;
    let tid = id(&created);
    assert_eq!(created["modified_at"], created["created_at"], "unmodified");
    assert_eq!(created["modified_by"], created["created_by"]);
    assert!(created.get("data").is_none());
    assert_eq!(created["expires_at"], Value::Null);

    let r = patch(&app, k, &tid, json!({"metadata": {"a": null, "c": "3"}}))
        .await
        .expect(200);
    assert_eq!(r.body["metadata"], json!({"b": "2", "c": "3"}));
    assert!(r.body.get("data").is_none(), "no data in the update answer");
    assert_eq!(r.body["created_at"], created["created_at"]);
    assert!(
        r.body["modified_at"].as_str() > created["modified_at"].as_str(),
        "modified_at moves"
    );
    assert_eq!(r.body["fingerprint"], created["fingerprint"], "same data");

    let r = patch(&app, k, &tid, json!({"data": {"number": OTHER_CARD}}))
        .await
        .expect(200);
    assert_ne!(
        r.body["fingerprint"], created["fingerprint"],
        "data changed"
    );
    let read = get(&app, k, &format!("/tokens/{tid}")).await.expect(200);
    assert_eq!(
        read.body["data"],
        json!({"number": OTHER_CARD}),
        "replaced whole"
    );
    assert_eq!(read.body["metadata"], json!({"b": "2", "c": "3"}));
    assert_eq!(read.body["fingerprint"], r.body["fingerprint"]);

    // `application/json` is accepted too; `metadata: null` clears every pair.
    let r = Caller::new(&app, k)
        .patch(
            &format!("/tokens/{tid}"),
            json!({"metadata": null, "expires_at": in_secs(3600.0)}),
        )
        .await
        .expect(200);
    assert_eq!(r.body["metadata"], json!({}));
    assert!(r.body["expires_at"].is_string());
    let r = patch(&app, k, &tid, json!({"expires_at": null}))
        .await
        .expect(200);
    assert_eq!(r.body["expires_at"], Value::Null, "cleared");
}

async fn patch_refuses_immutables_and_invalid_values(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let k = t.admin_key.as_str();
    let mut body = card(CARD);
    body["metadata"] = json!({"a": "1", "b": "2"});
    let tid = id(&create(&app, k, body.clone()).await);
    for (body, field) in [
        (json!({"type": "bank"}), "type"),
        (json!({"containers": ["/pci/low/"]}), "containers"),
        (json!({"id": tid}), "id"),
        (json!({"data": null}), "data"),
        (
            json!({"data": {"number": "4242424242424241"}}),
            "data.number",
        ),
        (json!({"expires_at": in_secs(-10.0)}), "expires_at"),
        (json!({"expires_at": "tomorrow"}), "expires_at"),
        (json!({"metadata": {"k": 1}}), "metadata.k"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let r = patch(&app, k, &tid, body.clone()).await.expect(400);
        assert_eq!(r.error_fields(), vec![field.to_string()], "{body}");
    }
    // The merged result must keep the metadata limits.
    let many: serde_json::Map<String, Value> =
        (0..101).map(|i| (format!("k{i}"), json!("v"))).collect();
    let r = patch(&app, k, &tid, json!({"metadata": many}))
        .await
        .expect(400);
    assert_eq!(r.error_fields(), vec!["metadata"]);
    let req = test::TestRequest::patch()
        .uri(&format!("/tokens/{tid}"))
        .insert_header(("SVC-API-KEY", k))
        .insert_header(("content-type", "text/plain"))
        .set_payload("{}");
    send_raw(&app, req).await.expect(415);
    let read = get(&app, k, &format!("/tokens/{tid}")).await.expect(200);
    assert_eq!(
        (&read.body["data"], &read.body["metadata"]),
        (&body["data"], &body["metadata"]),
        "refused patches change nothing"
    );
}

async fn patch_needs_token_update_and_stays_in_the_tenant(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let tid = id(&create(&app, &a.admin_key, json!({"type": "token", "data": "x"})).await);
    let reader = app_key(
        &app,
        &a.admin_key,
        json!({"name": "r", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    let updater = app_key(
        &app,
        &a.admin_key,
        json!({"name": "u", "type": "private", "permissions": ["token:update"]}),
    )
    .await;
    let pci_only = app_key(&app, &a.admin_key, pci_only("token:update")).await;
    let set_a = json!({"metadata": {"a": "1"}});
    patch(&app, &reader, &tid, set_a.clone()).await.expect(403);
    patch(&app, &pci_only, &tid, set_a.clone())
        .await
        .expect(403);
    let r = patch(&app, &updater, &tid, set_a).await.expect(200);
    assert_ne!(
        r.body["modified_by"], r.body["created_by"],
        "the updater is recorded"
    );
    // Another tenant's token, and no token at all, are both 404.
    patch(&app, &b.admin_key, &tid, json!({"metadata": {"a": "2"}}))
        .await
        .expect(404);
    patch(&app, &a.admin_key, &TokenId::new().to_string(), json!({}))
        .await
        .expect(404);
    let read = get(&app, &a.admin_key, &format!("/tokens/{tid}"))
        .await
        .expect(200);
    assert_eq!(read.body["metadata"], json!({"a": "1"}));
}

/// A parent and a child of it that expires in 1.5 s, with metadata `m: 1`: their ids.
async fn parent_and_short_lived_child<S, B>(app: &S, k: &str) -> (String, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let parent = id(&create(app, k, json!({"type": "token", "data": "parent"})).await);
    let short = create(app, k, json!({"type": "token", "data": "short", "metadata": {"m": "1"}, "expires_at": in_secs(1.5)})).await;
    let sid = id(&short);
    assert!(short["expires_at"].is_string());
    let link = format!("/tokens/{parent}/children/{sid}");
    Caller::new(app, k)
        .send(actix_web::http::Method::POST, &link, None)
        .await
        .expect(204);
    (parent, sid)
}

async fn expired_tokens_vanish_everywhere(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let k = t.admin_key.as_str();
    let expired = json!({"type": "token", "data": "x", "expires_at": in_secs(-1.0)});
    let r = post(&app, k, "/tokens", expired, None).await.expect(400);
    assert_eq!(r.error_fields(), vec!["expires_at"]);

    let (parent, sid) = parent_and_short_lived_child(&app, k).await;
    let children = format!("/tokens/{parent}/children");
    // Before its expiry: readable, listed, a child.
    get(&app, k, &format!("/tokens/{sid}")).await.expect(200);
    assert!(ids(&get(&app, k, "/tokens").await.expect(200).body).contains(&sid));
    let kids = get(&app, k, &children).await.expect(200).body;
    assert_eq!(ids(&kids), vec![sid.clone()]);

    tokio::time::sleep(Duration::from_millis(1700)).await;
    // After: an unknown token everywhere, though its row is still there.
    get(&app, k, &format!("/tokens/{sid}")).await.expect(404);
    patch(&app, k, &sid, json!({"metadata": {"m": "2"}}))
        .await
        .expect(404);
    Caller::new(&app, k)
        .send(
            actix_web::http::Method::POST,
            &format!("{children}/{sid}"),
            None,
        )
        .await
        .expect(404);
    let list = get(&app, k, "/tokens").await.expect(200).body;
    assert_eq!(ids(&list), vec![parent.clone()]);
    assert_eq!(list["pagination"]["total_items"], 1, "not counted");
    assert_eq!(total(&app, k, &children).await, 0);
    let found = post(
        &app,
        k,
        "/tokens/search",
        json!({"metadata": {"m": "1"}}),
        None,
    )
    .await
    .expect(200)
    .body;
    assert_eq!(found["pagination"]["total_items"], 0);
    let sid: TokenId = sid.parse().expect("id");
    let row = db.db.get_token(t.tenant_id, sid).await.expect("read");
    assert!(row.is_some(), "not swept yet");
}

async fn the_sweep_deletes_expired_tokens_and_their_links(db: &TestDatabase) {
    let st = state(db, MIB);
    let vault = st.vault.clone();
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let (parent, sid) = parent_and_short_lived_child(&app, k).await;
    tokio::time::sleep(Duration::from_millis(1700)).await;
    let sid_parsed: TokenId = sid.parse().expect("id");
    // A sweeper on a short interval removes the row (its link with it) within a few rounds.
    let sweeper =
        tessera_startup::spawn_sweeper(vault, Duration::from_millis(100)).expect("sweeper");
    let mut gone = false;
    for _ in 0..100 {
        let row = db
            .db
            .get_token(t.tenant_id, sid_parsed.clone())
            .await
            .expect("read");
        if row.is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sweeper.abort();
    assert!(gone, "the sweep deleted the expired token");
    get(&app, k, &format!("/tokens/{parent}")).await.expect(200);
    Caller::new(&app, k)
        .delete(&format!("/tokens/{parent}/children/{sid}"))
        .await
        .expect(404);
}

async fn fingerprints_are_equal_for_equal_data_within_a_tenant_only(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let ka = a.admin_key.as_str();
    let one = create(&app, ka, card(CARD)).await;
    let fp = one["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_string();
    assert_eq!(fp.len(), 64);
    assert!(fp
        .bytes()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    // Same number, other expiry and cvc: a card's fingerprint is over the number only.
    let two = create(
        &app,
        ka,
        json!({"type": "card", "data": {"number": CARD, "cvc": "999"}}),
    )
    .await;
    assert_eq!(two["fingerprint"], fp.as_str());
    assert_ne!(
        create(&app, ka, card(OTHER_CARD)).await["fingerprint"],
        fp.as_str()
    );
    // Another tenant, same number: another fingerprint.
    assert_ne!(
        create(&app, &b.admin_key, card(CARD)).await["fingerprint"],
        fp.as_str()
    );
    // Read and list carry it too.
    assert_eq!(
        get(&app, ka, &format!("/tokens/{}", id(&one)))
            .await
            .expect(200)
            .body["fingerprint"],
        fp.as_str()
    );
    let listed = get(&app, ka, "/tokens").await.expect(200).body;
    assert_eq!(listed["data"][0]["fingerprint"], fp.as_str());
    // Banks: routing and account number; other types: canonical JSON (key order ignored).
    let bank = |acct: &str| json!({"type": "bank", "data": {"routing_number": "011000015", "account_number": acct}});
    let b1 = create(&app, ka, bank("123")).await["fingerprint"].clone();
    assert_eq!(create(&app, ka, bank("123")).await["fingerprint"], b1);
    assert_ne!(create(&app, ka, bank("124")).await["fingerprint"], b1);
    let j1 = create(
        &app,
        ka,
        json!({"type": "token", "data": {"a": 1, "b": [1, {"c": 2, "d": 3}]}}),
    )
    .await;
    let j2 = create(
        &app,
        ka,
        json!({"type": "token", "data": {"b": [1, {"d": 3, "c": 2}], "a": 1}}),
    )
    .await;
    assert_eq!(j1["fingerprint"], j2["fingerprint"]);
    let j3 = create(
        &app,
        ka,
        json!({"type": "token", "data": {"a": 1, "b": [{"c": 2, "d": 3}, 1]}}),
    )
    .await;
    assert_ne!(j1["fingerprint"], j3["fingerprint"], "array order counts");
    // The same string as a token and inside a card: different types never coincide.
    assert_ne!(
        create(&app, ka, json!({"type": "token", "data": CARD})).await["fingerprint"],
        fp.as_str()
    );
}

async fn deduplication_answers_the_existing_token(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = a.admin_key.as_str();
    let mut dedup = card(CARD);
    dedup["deduplicate_token"] = json!(true);
    let first = post(&app, k, "/tokens", dedup.clone(), None)
        .await
        .expect(201)
        .body;
    let again = post(&app, k, "/tokens", dedup.clone(), None)
        .await
        .expect(200)
        .body;
    assert_eq!(id(&again), id(&first), "the existing token");
    assert!(again.get("data").is_none());
    // Without the flag, a new token; in another container or tenant, no match.
    assert_ne!(id(&create(&app, k, card(CARD)).await), id(&first));
    let mut elsewhere = dedup.clone();
    elsewhere["containers"] = json!(["/pci/low/"]);
    let other = post(&app, k, "/tokens", elsewhere, None)
        .await
        .expect(201)
        .body;
    assert_ne!(id(&other), id(&first));
    post(&app, &b.admin_key, "/tokens", dedup.clone(), None)
        .await
        .expect(201);
    // The oldest equal token answers, and the count shows nothing more was created.
    assert_eq!(
        id(&post(&app, k, "/tokens", dedup.clone(), None)
            .await
            .expect(200)
            .body),
        id(&first)
    );
    let list = get(&app, k, "/tokens?type=card").await.expect(200).body;
    assert_eq!(list["pagination"]["total_items"], 3);
    // An expired original no longer matches.
    let mut brief = json!({"type": "token", "data": "brief", "deduplicate_token": true, "expires_at": in_secs(1.0)});
    let short = post(&app, k, "/tokens", brief.clone(), None)
        .await
        .expect(201)
        .body;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    brief["expires_at"] = Value::Null;
    assert_ne!(
        id(&post(&app, k, "/tokens", brief, None).await.expect(201).body),
        id(&short)
    );
    // Child creation deduplicates too: the existing token is linked.
    let parent = id(&create(&app, k, json!({"type": "token", "data": "p"})).await);
    let linked = post(&app, k, &format!("/tokens/{parent}/children"), dedup, None)
        .await
        .expect(200)
        .body;
    assert_eq!(id(&linked), id(&first));
    let kids = get(&app, k, &format!("/tokens/{parent}/children"))
        .await
        .expect(200)
        .body;
    assert_eq!(ids(&kids), vec![id(&first)]);
}

async fn an_idempotency_key_replays_the_first_answer_and_refuses_another_request(
    db: &TestDatabase,
) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    let body = json!({"type": "token", "data": "idempotent"});
    let first = post(&app, k, "/tokens", body.clone(), Some("order-1"))
        .await
        .expect(201);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let again = post(&app, k, "/tokens", body.clone(), Some("order-1"))
        .await
        .expect(201);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.body, first.body, "the first answer, byte for byte");
    assert_eq!(total(&app, k, "/tokens").await, 1);
    // Same key, another body or path: 422, nothing created.
    let other = json!({"type": "token", "data": "other"});
    post(&app, k, "/tokens", other, Some("order-1"))
        .await
        .expect(422);
    post(&app, k, "/tokenize", json!([body]), Some("order-1"))
        .await
        .expect(422);
    assert_eq!(total(&app, k, "/tokens").await, 1);
}

/// Keys belong to one application: another application (or tenant) may reuse the string.
async fn idempotency_keys_belong_to_one_application(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = a.admin_key.as_str();
    let body = json!({"type": "token", "data": "idempotent"});
    let first = post(&app, k, "/tokens", body.clone(), Some("order-1"))
        .await
        .expect(201);
    let other = app_key(
        &app,
        k,
        json!({"name": "o", "type": "private", "permissions": ["token:create", "token:read"]}),
    )
    .await;
    let theirs = post(&app, &other, "/tokens", body.clone(), Some("order-1"))
        .await
        .expect(201);
    assert!(theirs.headers.get("idempotent-replayed").is_none());
    assert_ne!(id(&theirs.body), id(&first.body));
    post(&app, &b.admin_key, "/tokens", body, Some("order-1"))
        .await
        .expect(201);
}

async fn a_failed_request_is_not_remembered_and_malformed_keys_are_refused(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    // A failed request is not remembered: the corrected retry runs.
    let invalid = json!({"type": "card", "data": {"number": "1"}});
    post(&app, k, "/tokens", invalid, Some("order-2"))
        .await
        .expect(400);
    post(&app, k, "/tokens", card(CARD), Some("order-2"))
        .await
        .expect(201);
    // Malformed keys.
    let body = json!({"type": "token", "data": "idempotent"});
    post(&app, k, "/tokens", body.clone(), Some(&"k".repeat(256)))
        .await
        .expect(400);
    let req = test::TestRequest::post()
        .uri("/tokens")
        .insert_header(("SVC-API-KEY", k))
        .insert_header((
            "Idempotency-Key",
            actix_web::http::header::HeaderValue::from_bytes(b"caf\xc3\xa9").expect("value"),
        ))
        .set_json(body);
    let r = send_raw(&app, req).await.expect(400);
    assert_eq!(r.error_fields(), vec!["Idempotency-Key"]);
}

/// Applications: the replay carries the same new key, which is stored only sealed.
async fn a_replayed_application_keeps_its_key_sealed(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    let spec = json!({"name": "svc", "type": "private", "permissions": ["token:read"]});
    let made = post(&app, k, "/applications", spec.clone(), Some("app-1"))
        .await
        .expect(201);
    let replayed = post(&app, k, "/applications", spec, Some("app-1"))
        .await
        .expect(201);
    assert_eq!(replayed.body["key"], made.body["key"]);
    let secret = made.body["key"].as_str().expect("key");
    let bytes = db.stored_bytes().await;
    assert!(
        !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
        "a replayable API key is on disk in clear"
    );
}

async fn bulk_and_child_creation_honour_idempotency_keys(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    let body = json!({"type": "token", "data": "idempotent"});
    let both = json!([body.clone(), body.clone()]);
    let bulk = post(&app, k, "/tokenize", both.clone(), Some("bulk-1"))
        .await
        .expect(201);
    let bulk_again = post(&app, k, "/tokenize", both, Some("bulk-1"))
        .await
        .expect(201);
    assert_eq!(bulk.body, bulk_again.body);
    let parent = id(&create(&app, k, body.clone()).await);
    let children = format!("/tokens/{parent}/children");
    let child = post(&app, k, &children, body.clone(), Some("child-1"))
        .await
        .expect(201);
    let child_again = post(&app, k, &children, body, Some("child-1"))
        .await
        .expect(201);
    assert_eq!(id(&child.body), id(&child_again.body));
    assert_eq!(total(&app, k, &children).await, 1);
}

async fn one_idempotency_key_sent_twenty_times_at_once_creates_one_token(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    let body = json!({"type": "token", "data": "once"});
    let replies = futures_util::future::join_all(
        (0..20).map(|_| post(&app, k, "/tokens", body.clone(), Some("same-key"))),
    )
    .await;
    let mut created = 0;
    let mut ids_seen = std::collections::HashSet::new();
    for r in replies {
        match r.status.as_u16() {
            201 => {
                if r.headers.get("idempotent-replayed").is_none() {
                    created += 1;
                }
                ids_seen.insert(id(&r.body));
            }
            409 => {
                r.expect(409);
            }
            other => panic!("unexpected {other}: {}", String::from_utf8_lossy(&r.raw)),
        }
    }
    assert_eq!(created, 1, "exactly one request ran");
    assert_eq!(ids_seen.len(), 1, "every success names the same token");
    assert_eq!(total(&app, k, "/tokens").await, 1);
}

async fn bulk_tokenize_is_ordered(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    let r = post(&app, k, "/tokenize", json!([
        {"type": "token", "data": "first", "metadata": {"n": "0"}},
        card(CARD),
        {"type": "bank", "data": {"routing_number": "011000015", "account_number": "1"}, "containers": ["/bank/low/"]},
    ]), None).await.expect(201);
    let out = r.body.as_array().expect("array");
    assert_eq!(out.len(), 3);
    assert_eq!(
        out.iter().map(|t| t["type"].clone()).collect::<Vec<_>>(),
        vec![json!("token"), json!("card"), json!("bank")]
    );
    assert_eq!(out[0]["metadata"], json!({"n": "0"}));
    assert_eq!(out[2]["containers"], json!(["/bank/low/"]));
    assert!(out.iter().all(|t| t.get("data").is_none()));
    let read = get(&app, k, &format!("/tokens/{}", id(&out[1])))
        .await
        .expect(200);
    assert_eq!(read.body["data"]["number"], CARD);
}

async fn bulk_tokenize_is_all_or_nothing(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    create(&app, k, card(CARD)).await;
    // One invalid element: 400 naming its index, nothing stored.
    let before = total(&app, k, "/tokens").await;
    let r = post(
        &app,
        k,
        "/tokenize",
        json!([
            {"type": "token", "data": "ok"},
            {"type": "card", "data": {"number": "4242424242424241"}},
            {"type": "token"},
        ]),
        None,
    )
    .await
    .expect(400);
    assert_eq!(r.error_fields(), vec!["[1].data.number", "[2].data"]);
    let many: Vec<Value> = (0..101)
        .map(|i| json!({"type": "token", "data": i}))
        .collect();
    let many_named: serde_json::Map<String, Value> = (0..101)
        .map(|i| (format!("t{i}"), json!({"type": "token", "data": i})))
        .collect();
    for refused in [json!([]), json!(many), json!({}), json!(many_named)] {
        post(&app, k, "/tokenize", refused, None).await.expect(400);
    }
    // Permission on every target container, else 403 and nothing stored.
    let pci = app_key(&app, k, pci_only("token:create")).await;
    let mixed = json!([card(CARD), {"type": "token", "data": "general"}]);
    post(&app, &pci, "/tokenize", mixed, None).await.expect(403);
    post(&app, &pci, "/tokenize", json!([card(CARD)]), None)
        .await
        .expect(201);
    let after = total(&app, k, "/tokens").await;
    assert_eq!(
        after.as_i64(),
        before.as_i64().map(|n| n + 1),
        "only the permitted batch"
    );
}

/// Deduplicating elements answer an existing token or an earlier element.
async fn bulk_tokenize_deduplicates_against_stored_tokens_and_earlier_elements(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    let mut dedup = card(OTHER_CARD);
    dedup["deduplicate_token"] = json!(true);
    let r = post(
        &app,
        k,
        "/tokenize",
        json!([dedup.clone(), dedup.clone(), card(OTHER_CARD)]),
        None,
    )
    .await
    .expect(201);
    let out = r.body.as_array().expect("array");
    assert_eq!(id(&out[0]), id(&out[1]));
    assert_ne!(id(&out[0]), id(&out[2]));
    // A stored equal token answers in a later batch.
    let r = post(&app, k, "/tokenize", json!([dedup]), None)
        .await
        .expect(201);
    assert_eq!(id(&r.body[0]), id(&out[0]));
}

/// Five tokens of tenant `k`, oldest first: cards and plain tokens in several containers,
/// for customers `c1` and `c2`.
async fn five_tokens<S, B>(app: &S, k: &str) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let mut made = Vec::new();
    for (i, (kind, container, customer)) in [
        ("card", "/pci/high/", "c1"),
        ("card", "/pci/low/", "c1"),
        ("token", "/general/high/", "c1"),
        ("token", "/general/high/", "c2"),
        ("card", "/pci/high/", "c2"),
    ]
    .into_iter()
    .enumerate()
    {
        let data = if kind == "card" {
            json!({"number": CARD})
        } else {
            json!(format!("t{i}"))
        };
        let t = create(app, k, json!({"type": kind, "data": data, "containers": [container], "metadata": {"customer": customer, "i": i.to_string()}})).await;
        made.push(t);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    made
}

async fn search_combines_filters_and_pages_newest_first(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    let made = five_tokens(&app, k).await;
    let search = |body: Value| post(&app, k, "/tokens/search", body, None);
    let r = search(json!({"metadata": {"customer": "c1"}}))
        .await
        .expect(200)
        .body;
    assert_eq!(
        ids(&r),
        vec![id(&made[2]), id(&made[1]), id(&made[0])],
        "newest first"
    );
    assert!(r["data"][0].get("data").is_none(), "no data unless asked");
    let r = search(json!({"fingerprint": made[0]["fingerprint"], "include_data": true}))
        .await
        .expect(200)
        .body;
    assert_eq!(ids(&r), vec![id(&made[4]), id(&made[1]), id(&made[0])]);
    assert_eq!(r["data"][0]["data"], json!({"number": CARD}));
    for (filters, found) in [
        (
            json!({"metadata": {"customer": "c1"}, "type": ["card"], "container": "/pci/"}),
            vec![1, 0],
        ),
        (
            json!({"container": "/pci/high/", "metadata": {"customer": "c2"}}),
            vec![4],
        ),
        (
            json!({"created_after": made[1]["created_at"], "created_before": made[4]["created_at"]}),
            vec![3, 2],
        ),
    ] {
        let r = search(filters.clone()).await.expect(200).body;
        let expected: Vec<String> = found.into_iter().map(|i| id(&made[i])).collect();
        assert_eq!(ids(&r), expected, "{filters}");
    }
    let r = search(json!({"size": 2, "page": 2})).await.expect(200).body;
    assert_eq!(ids(&r), vec![id(&made[2]), id(&made[1])]);
    assert_eq!(
        r["pagination"],
        json!({"total_items": 5, "page_number": 2, "page_size": 2, "total_pages": 3})
    );
    assert_eq!(
        search(json!({"size": 2, "page": 4})).await.expect(200).body["data"],
        json!([])
    );
}

async fn search_refuses_invalid_filters(db: &TestDatabase) {
    let (app, a) = app_with_tenant(db, "a").await;
    let k = a.admin_key.as_str();
    five_tokens(&app, k).await;
    for (body, field) in [
        (json!({"size": 0}), "size"),
        (json!({"container": "pci"}), "container"),
        (json!({"created_after": "yesterday"}), "created_after"),
        (json!({"type": ["nope"]}), "type[0]"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let r = post(&app, k, "/tokens/search", body.clone(), None)
            .await
            .expect(400);
        assert_eq!(r.error_fields(), vec![field.to_string()], "{body}");
    }
}

async fn search_narrows_by_permission_and_tenant(db: &TestDatabase) {
    let st = state(db, MIB);
    let a = tenant(&st, "a").await;
    let b = tenant(&st, "b").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = a.admin_key.as_str();
    let made = five_tokens(&app, k).await;
    // A key reading only /pci/high/ sees and counts only those.
    let narrow = app_key(&app, k, json!({"name": "n", "type": "private", "permissions": [],
        "rules": [{"description": "pci high", "priority": 1, "container": "/pci/high/", "permissions": ["token:read"]}]})).await;
    let c1 = json!({"metadata": {"customer": "c1"}});
    let r = post(&app, &narrow, "/tokens/search", c1, None)
        .await
        .expect(200)
        .body;
    assert_eq!(ids(&r), vec![id(&made[0])]);
    assert_eq!(r["pagination"]["total_items"], 1);
    let creator = app_key(
        &app,
        k,
        json!({"name": "c", "type": "private", "permissions": ["token:create"]}),
    )
    .await;
    post(&app, &creator, "/tokens/search", json!({}), None)
        .await
        .expect(403);
    // Another tenant finds nothing, even by this tenant's exact fingerprint.
    let theirs = json!({"fingerprint": made[0]["fingerprint"]});
    let r = post(&app, &b.admin_key, "/tokens/search", theirs, None)
        .await
        .expect(200)
        .body;
    assert_eq!(r["pagination"]["total_items"], 0);
}
