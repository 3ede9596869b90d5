//! The audit trail of management calls, on both backends: every audited action
//! recorded once with its fields, refusals (401/403) with their reason, `GET /audit-events`
//! with its filters and pagination, tenant confinement, no secret anywhere in the trail or
//! its stream, and a chain that verifies until a row is edited in the database.

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use crate::caller::MIB;
use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    http::Method,
    test, Error,
};
use serde_json::{json, Value};
use tessera_domain::{audit::Durability, Vault};
use tessera_http::{ApiConfig, ApiState, ProcessMetrics};
use tessera_storage::DetachedStore;
use tessera_testkit::{
    api::{app_key, app_with_tenant, send, send_raw, state, tenant, Caller, TenantKeys},
    backend_tests,
    db::TestDatabase,
};

backend_tests!(
    token_actions_are_recorded_once_each,
    application_and_proxy_actions_are_recorded_once_each,
    reads_without_data_record_nothing_and_replays_a_replay,
    refusals_are_recorded_with_their_reason,
    filters_and_pages_newest_first,
    another_tenants_events_are_never_visible,
    audit_read_is_required_and_filters_are_validated,
    no_secret_reaches_the_trail_or_its_stream,
    the_chain_verifies_until_a_row_is_edited,
    a_planted_record_gets_503s_and_loses_no_event,
);

const CARD_NUMBER: &str = "4242424242424242";
const CONFIG_VALUE: &str = "cfg-value-sk_live_51Hx9";

/// Every event of the tenant, oldest first.
async fn trail<S, B>(app: &S, key: &str) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let page = send(app, Method::GET, "/audit-events?size=100", Some(key), None)
        .await
        .expect(200)
        .body;
    let mut events = page["data"].as_array().expect("data").clone();
    events.reverse();
    events
}

fn actions(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["action"].as_str().expect("action"))
        .collect()
}

fn ids(event: &Value) -> Vec<&str> {
    event["resource_ids"]
        .as_array()
        .expect("resource_ids")
        .iter()
        .map(|v| v.as_str().expect("id"))
        .collect()
}

/// The admin application's id: the actor of everything its key does.
async fn admin_id(st: &ApiState, t: &TenantKeys) -> String {
    st.vault
        .authenticate(Some(&t.admin_key))
        .await
        .expect("admin")
        .application_id()
        .to_string()
}

/// Each event succeeded, by the admin, in its tenant, with its fields, and names the previous
/// one's hash: a chain.
fn assert_admin_successes_in_a_chain(events: &[Value], admin_id: &str, t: &TenantKeys) {
    for e in events {
        assert_eq!(e["outcome"], "success");
        assert_eq!(e["actor"], admin_id);
        assert_eq!(e["tenant_id"], t.tenant_id.to_string());
        assert!(e["request_id"].is_string(), "{e}");
        assert!(e["id"].is_string() && e["occurred_at"].is_string());
        assert!(e.get("reason").is_none() && e.get("proxy_id").is_none());
        assert_eq!(e["hash"].as_str().expect("hash").len(), 64);
    }
    for pair in events.windows(2) {
        assert_eq!(pair[1]["prev_hash"], pair[0]["hash"]);
        assert_eq!(
            pair[1]["seq"].as_i64().expect("seq"),
            pair[0]["seq"].as_i64().expect("seq") + 1
        );
    }
}

async fn token_actions_are_recorded_once_each(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let admin_id = admin_id(&st, &t).await;
    let app = test::init_service(tessera_http::app(st)).await;
    let c = Caller::new(&app, &t.admin_key);
    let card = c.create("/tokens", json!({"type": "card", "data": {"number": CARD_NUMBER, "expiration_month": 12, "expiration_year": 2030}})).await;
    let other = c
        .create("/tokens", json!({"type": "token", "data": "other"}))
        .await;
    c.get(&format!("/tokens/{card}")).await.expect(200);
    c.get("/tokens").await.expect(200);
    c.post("/tokens/search", json!({"include_data": true}))
        .await
        .expect(200);
    let patch = json!({"metadata": {"a": "b"}});
    c.patch(&format!("/tokens/{other}"), patch)
        .await
        .expect(200);
    let bulk = json!([{"type": "token", "data": 1}, {"type": "token", "data": 2}]);
    let bulk = c.post("/tokenize", bulk).await.expect(201).body;
    let children = format!("/tokens/{card}/children");
    let child = json!({"type": "token", "data": "child"});
    let child = c.create(&children, child).await;
    c.get(&children).await.expect(200);
    let link = format!("{children}/{other}");
    c.send(Method::POST, &link, None).await.expect(204);
    c.delete(&link).await.expect(204);
    c.delete(&format!("/tokens/{other}")).await.expect(204);

    let events = trail(&app, &t.admin_key).await;
    assert_eq!(
        actions(&events),
        vec![
            "token.created",
            "token.created",
            "token.read",
            "token.read",
            "token.read",
            "token.updated",
            "token.created",
            "token.created",
            "association.created",
            "token.read",
            "association.created",
            "association.deleted",
            "token.deleted",
        ]
    );
    assert_admin_successes_in_a_chain(&events, &admin_id, &t);
    assert_eq!(ids(&events[0]), vec![card.as_str()]);
    assert_eq!(ids(&events[2]), vec![card.as_str()], "the read token");
    assert_eq!(ids(&events[3]).len(), 2, "the listed tokens");
    let bulk_ids: Vec<&str> = bulk
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids(&events[6]), bulk_ids, "one event for the bulk create");
    assert_eq!(ids(&events[7]), vec![child.as_str()]);
    assert_eq!(ids(&events[8]), vec![card.as_str(), child.as_str()]);
    assert_eq!(ids(&events[10]), vec![card.as_str(), other.as_str()]);
    assert_eq!(ids(&events[12]), vec![other.as_str()]);
}

async fn application_and_proxy_actions_are_recorded_once_each(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let admin_id = admin_id(&st, &t).await;
    let app = test::init_service(tessera_http::app(st)).await;
    let c = Caller::new(&app, &t.admin_key);
    let spec = json!({"name": "backend", "type": "private", "permissions": ["token:read"]});
    let application = c.create("/applications", spec.clone()).await;
    let path = format!("/applications/{application}");
    c.put(&path, spec).await.expect(200);
    let regenerate = format!("{path}/regenerate");
    c.send(Method::POST, &regenerate, None).await.expect(200);
    c.delete(&path).await.expect(204);
    let proxy_spec = json!({"name": "p", "destination_url": "https://api.example.com",
        "configuration": {"secret": CONFIG_VALUE}});
    let proxy = c.create("/proxies", proxy_spec.clone()).await;
    let path = format!("/proxies/{proxy}");
    c.put(&path, proxy_spec).await.expect(200);
    c.delete(&path).await.expect(204);

    let events = trail(&app, &t.admin_key).await;
    assert_eq!(
        actions(&events),
        vec![
            "application.created",
            "application.updated",
            "application.key_regenerated",
            "application.deleted",
            "proxy.created",
            "proxy.updated",
            "proxy.deleted",
        ]
    );
    assert_admin_successes_in_a_chain(&events, &admin_id, &t);
    assert_eq!(ids(&events[0]), vec![application.as_str()]);
    assert_eq!(ids(&events[6]), vec![proxy.as_str()]);
}

async fn reads_without_data_record_nothing_and_replays_a_replay(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let k = t.admin_key.as_str();
    let c = Caller::new(&app, k);
    // An empty list and a search without data return no data.
    c.get("/tokens").await.expect(200);
    let keyed_create = || {
        test::TestRequest::post()
            .uri("/tokens")
            .insert_header(("SVC-API-KEY", k))
            .insert_header(("Idempotency-Key", "once"))
            .set_json(json!({"type": "token", "data": "x"}))
    };
    let first = send_raw(&app, keyed_create()).await.expect(201);
    let again = send_raw(&app, keyed_create()).await.expect(201);
    assert_eq!(first.body["id"], again.body["id"], "a replay");
    c.post("/tokens/search", json!({"include_data": false}))
        .await
        .expect(200);
    // Reads that fail are not reads.
    let unknown = format!("/tokens/{}", uuid::Uuid::new_v4());
    c.get(&unknown).await.expect(404);
    // A replay is recorded as such, naming what the first request made.
    let events = trail(&app, k).await;
    assert_eq!(actions(&events), vec!["token.created", "request.replayed"]);
    assert_eq!(events[1]["resource_ids"], json!([first.body["id"]]));
}

async fn refusals_are_recorded_with_their_reason(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st.clone())).await;
    let k = t.admin_key.as_str();
    let token = Caller::new(&app, k)
        .create("/tokens", json!({"type": "token", "data": "x"}))
        .await;
    let reader = app_key(
        &app,
        k,
        json!({"name": "r", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    let reader_id = st
        .vault
        .authenticate(Some(&reader))
        .await
        .expect("reader")
        .application_id()
        .to_string();
    let as_reader = Caller::new(&app, &reader);
    as_reader
        .delete(&format!("/tokens/{token}"))
        .await
        .expect(403);
    let spec = json!({"name": "x", "type": "private", "permissions": ["token:read"]});
    as_reader.post("/applications", spec).await.expect(403);
    // An unknown key names no tenant: it goes to the deployment's chain.
    Caller::new(&app, "key_unknown")
        .get(&format!("/tokens/{token}"))
        .await
        .expect(401);
    // Routes that are not audited record no refusal.
    as_reader.get("/applications").await.expect(403);

    let events = trail(&app, k).await;
    let denied: Vec<&Value> = events.iter().filter(|e| e["outcome"] == "denied").collect();
    assert_eq!(denied.len(), 2, "{denied:#?}");
    assert_eq!(denied[0]["action"], "token.deleted");
    assert_eq!(ids(denied[0]), vec![token.as_str()]);
    assert_eq!(denied[1]["action"], "application.created");
    for e in &denied {
        assert_eq!(e["actor"], reader_id.as_str());
        assert!(
            e["reason"]
                .as_str()
                .is_some_and(|r| r.contains("the API key lacks")),
            "{e}"
        );
    }
    let deployment = db.audit_chain(None).await;
    assert_eq!(deployment.len(), 1);
    let e = &deployment[0].event;
    assert_eq!(e.action.as_str(), "token.read");
    assert_eq!(e.actor.to_wire(), "anonymous");
    assert_eq!(
        e.resource_ids,
        vec![token.parse::<uuid::Uuid>().expect("id")]
    );
    assert!(e.reason.is_some() && e.tenant_id.is_none());
}

async fn filters_and_pages_newest_first(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let mut tokens = Vec::new();
    for i in 0..5 {
        tokens.push(
            c.create("/tokens", json!({"type": "token", "data": i}))
                .await,
        );
    }
    let reader = app_key(
        &app,
        &t.admin_key,
        json!({"name": "r", "type": "private", "permissions": ["token:read"]}),
    )
    .await;
    let as_reader = Caller::new(&app, &reader);
    let second = format!("/tokens/{}", tokens[1]);
    as_reader.get(&second).await.expect(200);
    as_reader.delete(&second).await.expect(403);

    let get = |query: String| {
        let c = &c;
        async move {
            c.get(&format!("/audit-events?{query}"))
                .await
                .expect(200)
                .body
        }
    };
    let page = get("size=2&page=2".into()).await;
    assert_eq!(page["pagination"]["total_items"], 8);
    assert_eq!(page["pagination"]["total_pages"], 4);
    assert_eq!(page["pagination"]["page_number"], 2);
    let seqs: Vec<i64> = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| e["seq"].as_i64().expect("seq"))
        .collect();
    assert_eq!(seqs, vec![6, 5], "newest first");

    let page = get(format!("resource_id={}", tokens[1])).await;
    assert_eq!(
        actions(page["data"].as_array().expect("data")),
        vec!["token.deleted", "token.read", "token.created"]
    );
    let page = get("outcome=denied".into()).await;
    assert_eq!(
        actions(page["data"].as_array().expect("data")),
        vec!["token.deleted"]
    );
    let reader_events = page["data"][0]["actor"].as_str().expect("actor");
    for (query, total) in [
        ("action=token.read&action=token.deleted".to_string(), 2),
        (format!("actor={reader_events}"), 2),
        ("actor=anonymous".into(), 0),
        (
            "from=2000-01-01T00:00:00Z&to=2001-01-01T00:00:00Z".into(),
            0,
        ),
        ("from=2000-01-01T00:00:00Z".into(), 8),
    ] {
        let page = get(query.clone()).await;
        assert_eq!(page["pagination"]["total_items"], total, "{query}");
    }
}

async fn another_tenants_events_are_never_visible(db: &TestDatabase) {
    let st = state(db, MIB);
    let (a, b) = (tenant(&st, "a").await, tenant(&st, "b").await);
    let app = test::init_service(tessera_http::app(st)).await;
    let token = Caller::new(&app, &a.admin_key)
        .create("/tokens", json!({"type": "token", "data": "a's"}))
        .await;
    let as_b = Caller::new(&app, &b.admin_key);
    // B probing A's token gets a 404 (for B it does not exist), which records nothing.
    as_b.get(&format!("/tokens/{token}")).await.expect(404);
    let seen = as_b
        .get(&format!("/audit-events?resource_id={token}"))
        .await
        .expect(200)
        .body;
    assert_eq!(seen["pagination"]["total_items"], 0);
    assert!(trail(&app, &b.admin_key).await.is_empty());
    assert_eq!(trail(&app, &a.admin_key).await.len(), 1);
}

async fn audit_read_is_required_and_filters_are_validated(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let k = t.admin_key.as_str();
    let c = Caller::new(&app, k);
    let manager = app_key(
        &app,
        k,
        json!({"name": "m", "type": "management", "permissions": ["application:read"]}),
    )
    .await;
    let r = send(&app, Method::GET, "/audit-events", Some(&manager), None)
        .await
        .expect(403);
    assert_eq!(r.body["detail"], "the API key lacks `audit:read`");
    let auditor = app_key(
        &app,
        k,
        json!({"name": "auditor", "type": "management", "permissions": ["audit:read"]}),
    )
    .await;
    send(&app, Method::GET, "/audit-events", Some(&auditor), None)
        .await
        .expect(200);
    send(&app, Method::GET, "/audit-events", None, None)
        .await
        .expect(401);
    for (query, field) in [
        ("action=token.stolen", "action"),
        ("outcome=maybe", "outcome"),
        ("from=yesterday", "from"),
        ("resource_id=1", "resource_id"),
        ("size=101", "size"),
        ("colour=red", "colour"),
    ] {
        let r = c.get(&format!("/audit-events?{query}")).await.expect(400);
        assert_eq!(r.error_fields(), vec![field], "{query}");
    }
    // audit:read is a management permission only.
    let spec = json!({"name": "x", "type": "private", "permissions": ["audit:read"]});
    c.post("/applications", spec).await.expect(400);
}

/// A stream sink the test can read back.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("sink").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The API state over `db` whose audit trail is also streamed to `sink`.
fn streaming_to(db: &TestDatabase, sink: &Sink) -> ApiState {
    let store = Arc::new(DetachedStore::new(db.db.clone()));
    let (log, writer) = tessera_audit::start(
        store.clone(),
        Durability::Sync,
        Some(Box::new(sink.clone())),
    );
    let vault = Vault::new(store, tessera_testkit::master_key()).with_audit(log);
    writer.spawn().expect("audit writer");
    ApiState::new(
        vault,
        ApiConfig {
            max_body_bytes: MIB,
            ..ApiConfig::default()
        },
        ProcessMetrics::new(),
    )
}

async fn no_secret_reaches_the_trail_or_its_stream(db: &TestDatabase) {
    let sink = Sink::default();
    let st = streaming_to(db, &sink);
    let t = tenant(&st, "acme").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    let c = Caller::new(&app, k);
    let card = c.create("/tokens", json!({"type": "card", "data": {"number": CARD_NUMBER, "expiration_month": 1, "expiration_year": 2031}})).await;
    c.get(&format!("/tokens/{card}")).await.expect(200);
    let spec = json!({"name": "n", "type": "private", "permissions": ["token:read"]});
    let app_secret = app_key(&app, k, spec).await;
    let proxy = json!({"name": "p", "destination_url": "https://api.example.com",
        "configuration": {"secret": CONFIG_VALUE}});
    let proxy = c.post("/proxies", proxy).await.expect(201).body;
    let proxy_key = proxy["key"].as_str().expect("key").to_string();
    // A refused key is recorded, never the key itself.
    Caller::new(&app, "key_presented_but_wrong")
        .get("/tokens")
        .await
        .expect(401);

    let events = trail(&app, k).await;
    assert_eq!(events.len(), 4, "{events:#?}");
    let listed = serde_json::to_vec(&events).expect("json");
    let streamed = sink.0.lock().expect("sink").clone();
    assert_eq!(
        streamed.iter().filter(|b| **b == b'\n').count(),
        5,
        "one line per event, the refusal included"
    );
    for line in streamed.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let e: Value = serde_json::from_slice(line).expect("a JSON line");
        assert!(e["action"].is_string() && e["hash"].is_string());
    }
    let stored = db.stored_bytes().await;
    for secret in [
        CARD_NUMBER,
        t.admin_key.as_str(),
        app_secret.as_str(),
        proxy_key.as_str(),
        CONFIG_VALUE,
        "key_presented_but_wrong",
    ] {
        assert!(!contains(&listed, secret), "{secret} in the listed trail");
        assert!(!contains(&streamed, secret), "{secret} in the stream");
        assert!(
            !contains(&stored, secret),
            "{secret} in the database's bytes"
        );
    }
}

async fn the_chain_verifies_until_a_row_is_edited(db: &TestDatabase) {
    let st = state(db, MIB);
    let t = tenant(&st, "acme").await;
    let vault = st.vault.clone();
    let app = test::init_service(tessera_http::app(st)).await;
    let k = t.admin_key.as_str();
    for i in 0..3 {
        let token = json!({"type": "token", "data": i});
        Caller::new(&app, k)
            .post("/tokens", token)
            .await
            .expect(201);
    }
    let report = vault.verify_audit(Some(t.tenant_id)).await.expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 3);
    // The writer's totals are on /metrics.
    let metrics =
        test::call_and_read_body(&app, test::TestRequest::get().uri("/metrics").to_request()).await;
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains("tessera_audit_events_committed_total 3"),
        "{metrics}"
    );
    assert!(metrics.contains("tessera_audit_queue_depth 0"), "{metrics}");
    let events = trail(&app, k).await;
    let second = events[1]["id"].as_str().expect("id");
    // Pretend the read came with another request.
    let request = events[1]["request_id"].as_str().expect("request id");
    db.edit_audit_text(Some(t.tenant_id), request, "forged-request")
        .await;
    let report = vault.verify_audit(Some(t.tenant_id)).await.expect("verify");
    let broken = report.broken.expect("detected");
    assert_eq!(
        broken.event_id.map(|id| id.to_string()).as_deref(),
        Some(second)
    );
    assert_eq!(broken.seq, 2);
}

/// With a record planted at the tenant's next position, card
/// calls answer 503 in sync mode instead of succeeding unrecorded; another tenant is served
/// and recorded meanwhile; once the record is removed, the held events are written and the
/// chain verifies.
async fn a_planted_record_gets_503s_and_loses_no_event(db: &TestDatabase) {
    let st = state(db, MIB);
    let (victim, other) = (tenant(&st, "victim").await, tenant(&st, "other").await);
    let vault = st.vault.clone();
    let app = test::init_service(tessera_http::app(st)).await;
    let card = json!({"type": "card", "data": {"number": CARD_NUMBER}});
    let as_victim = Caller::new(&app, &victim.admin_key);
    as_victim.post("/tokens", card.clone()).await.expect(201);
    let head = db.audit_chain(Some(victim.tenant_id)).await.len();
    db.execute(&format!(
        "INSERT INTO audit_blocks (tenant_id, first_seq, last_seq, earliest_at, latest_at, prev_hash, hashes, events, encoding) \
         SELECT tenant_id, {next}, {next}, earliest_at, latest_at, prev_hash, hashes, events, encoding FROM audit_blocks \
         WHERE tenant_id = '{}' AND first_seq = 1",
        victim.tenant_id,
        next = head + 1
    ))
    .await;
    let refused = as_victim.post("/tokens", card.clone()).await.expect(503);
    assert!(refused.body["detail"].as_str().is_some());
    Caller::new(&app, &other.admin_key)
        .post("/tokens", card)
        .await
        .expect(201);
    assert_eq!(db.audit_chain(Some(other.tenant_id)).await.len(), 1);
    let report = vault
        .verify_audit(Some(victim.tenant_id))
        .await
        .expect("verify");
    assert!(report.broken.is_some(), "verify reports the planted record");

    db.execute(&format!(
        "DELETE FROM audit_blocks WHERE tenant_id = '{}' AND first_seq = {}",
        victim.tenant_id,
        head + 1
    ))
    .await;
    vault.audit().flush().await;
    let events = db.audit_chain(Some(victim.tenant_id)).await;
    assert_eq!(events.len(), head + 1, "the held event was written");
    assert_eq!(events[head].event.action.as_str(), "token.created");
    assert!(vault
        .verify_audit(Some(victim.tenant_id))
        .await
        .expect("verify")
        .ok());
}
