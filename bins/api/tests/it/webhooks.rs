//! Webhooks end to end (docs/webhooks.md): `api serve` delivering to a receiver on loopback
//! (allowed by `--allow-private-destinations`), on SQLite and, when `TESSERA_TEST_DATABASE_URL`
//! is set, PostgreSQL. Every event type arrives, in chain order, signed so that Basis Theory's
//! verification (stable JSON, RSA-PSS/SHA-256, the PEM at `GET /webhooks/signing-key`)
//! accepts it; a receiver that was down gets everything on return; kill -9 loses nothing;
//! two processes deliver each event once; a failing webhook is disabled and stays so.

use std::{
    collections::{BTreeSet, HashMap},
    path::Path,
    time::Duration,
};

use serde_json::{json, Value};
use tessera_storage::DatabaseUrl;
use tessera_testkit::{
    db::TestDatabase,
    http_client,
    process::call,
    webhook_receiver::{signature_verifies, Delivery, Receiver},
};

use crate::cli::{bootstrap, serve, Api, MASTER_KEY};

/// How long a test waits for deliveries.
const WITHIN: Duration = Duration::from_secs(30);

/// Every event type Tessera sends.
const ALL_TYPES: [&str; 14] = [
    "token.created",
    "token.updated",
    "token.deleted",
    "token.expired",
    "token.property.expired",
    "token.read",
    "application.created",
    "application.updated",
    "application.deleted",
    "application.key.created",
    "application.key.deleted",
    "proxy.created",
    "proxy.updated",
    "proxy.deleted",
];

/// A served api with its admin key.
struct Served {
    api: Api,
    admin: String,
}

impl Served {
    fn start(dir: &Path, database: Option<&str>, extra: &[&str]) -> Self {
        let mut api = serve(
            dir,
            &args(database, extra),
            &[("TESSERA_MASTER_KEY", MASTER_KEY)],
        );
        let admin = bootstrap(&mut api)["api_key"]
            .as_str()
            .expect("api_key")
            .to_string();
        Served { api, admin }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.api.base);
        call(method, &url, &[("SVC-API-KEY", &self.admin)], body)
    }

    fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.call(method, path, body);
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {answer}"
        );
        answer
    }

    fn hook(&self, url: &str, events: &[&str]) -> String {
        let body = json!({"name": "receiver", "url": url, "events": events});
        self.ok("POST", "/webhooks", Some(body))["id"]
            .as_str()
            .expect("id")
            .to_string()
    }

    fn pem(&self) -> String {
        let answer = http_client::get(&format!("{}/webhooks/signing-key", self.api.base), &[]);
        assert_eq!(answer.status, 200);
        answer.text()
    }

    fn token(&self, data: &str) -> String {
        self.ok(
            "POST",
            "/tokens",
            Some(json!({"type": "token", "data": data})),
        )["id"]
            .as_str()
            .expect("id")
            .to_string()
    }
}

fn args<'a>(database: Option<&'a str>, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--allow-private-destinations", "--sweep-interval", "0.2"];
    if let Some(url) = database {
        args.extend(["--database-url", url]);
    }
    args.extend(extra);
    args
}

/// Runs `test` on SQLite, then on PostgreSQL when one is configured.
fn on_both(test: impl Fn(&Path, Option<&str>)) {
    let dir = tempfile::tempdir().expect("tempdir");
    test(dir.path(), None);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Some(pg) = rt.block_on(TestDatabase::postgres()) {
        let DatabaseUrl::Postgres { url } = &pg.url else {
            unreachable!("a PostgreSQL database")
        };
        let dir = tempfile::tempdir().expect("tempdir");
        test(dir.path(), Some(url));
    }
}

/// The accepted deliveries' `event.id`s, first arrivals only, in order.
fn first_arrivals(deliveries: &[Delivery]) -> Vec<Delivery> {
    let mut seen = BTreeSet::new();
    deliveries
        .iter()
        .filter(|d| (200..300).contains(&d.answered) && seen.insert(d.event_id()))
        .cloned()
        .collect()
}

/// The token ids of the first arrivals, in order.
fn arrived_tokens(receiver: &Receiver) -> Vec<String> {
    first_arrivals(&receiver.deliveries())
        .iter()
        .map(|d| {
            d.json()["event"]["data"]["token"]["id"]
                .as_str()
                .expect("id")
                .to_string()
        })
        .collect()
}

/// Every re-send of an id carried the same event.
fn duplicates_are_re_sends(deliveries: &[Delivery]) {
    let mut by_id: HashMap<String, Value> = HashMap::new();
    for d in deliveries {
        let event = d.json()["event"].clone();
        if let Some(first) = by_id.insert(d.event_id(), event.clone()) {
            assert_eq!(first, event, "a re-send of {} changed", d.event_id());
        }
    }
}

#[test]
fn every_event_type_arrives_signed_and_in_chain_order() {
    on_both(|dir, database| {
        let receiver = Receiver::start();
        let s = Served::start(dir, database, &["--cvc-retention", "1"]);
        let hook = s.hook(&receiver.url, &ALL_TYPES);
        let token = s.token("secret-first");
        s.ok("GET", &format!("/tokens/{token}"), None);
        s.ok(
            "PATCH",
            &format!("/tokens/{token}"),
            Some(json!({"metadata": {"k": "v"}})),
        );
        let bulk = s.ok(
            "POST",
            "/tokenize",
            Some(json!([{"type": "token", "data": "secret-b1"}, {"type": "token", "data": "secret-b2"}, {"type": "token", "data": "secret-b3"}])),
        );
        let app = s.ok(
            "POST",
            "/applications",
            Some(json!({"name": "ops", "type": "management", "permissions": ["proxy:read"]})),
        )["id"]
            .as_str()
            .expect("id")
            .to_string();
        s.ok(
            "PUT",
            &format!("/applications/{app}"),
            Some(json!({"name": "ops2", "permissions": ["proxy:read"]})),
        );
        let key = s.ok("POST", &format!("/applications/{app}/keys"), None)["id"]
            .as_str()
            .expect("key id")
            .to_string();
        s.ok("DELETE", &format!("/applications/{app}/keys/{key}"), None);
        s.ok("DELETE", &format!("/applications/{app}"), None);
        let proxy = s.ok(
            "POST",
            "/proxies",
            Some(json!({"name": "p", "destination_url": "https://example.com/x"})),
        )["id"]
            .as_str()
            .expect("proxy id")
            .to_string();
        s.ok(
            "PUT",
            &format!("/proxies/{proxy}"),
            Some(json!({"name": "p2", "destination_url": "https://example.com/y"})),
        );
        s.ok("DELETE", &format!("/proxies/{proxy}"), None);
        s.ok("DELETE", &format!("/tokens/{token}"), None);
        let soon = tessera_domain::timestamp::format(
            tessera_domain::timestamp::now() + time::Duration::seconds(1),
        );
        s.ok(
            "POST",
            "/tokens",
            Some(json!({"type": "token", "data": "secret-brief", "expires_at": soon})),
        );
        s.ok(
            "POST",
            "/tokens",
            Some(json!({"type": "card", "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2040, "cvc": "123"}})),
        );
        receiver.wait_for(WITHIN, "every event type", |seen| {
            let types: BTreeSet<String> = first_arrivals(seen)
                .iter()
                .map(Delivery::event_type)
                .collect();
            ALL_TYPES.iter().all(|t| types.contains(*t))
        });
        let pem = s.pem();
        let deliveries = receiver.deliveries();
        for d in &deliveries {
            assert!(
                signature_verifies(&pem, d, "SVC"),
                "a signature did not verify: {:?}",
                d.json()
            );
            assert_eq!(d.header("SVC-SIGNATURE-VERSION"), Some("v1"));
            assert_eq!(d.header("content-type"), Some("application/json"));
            let body = d.json();
            assert_eq!(
                body["event"]["tenant_id"],
                s.ok("GET", "/applications/key", None)["tenant_id"]
            );
            assert!(body["delivered_at"].is_string());
        }
        duplicates_are_re_sends(&deliveries);
        let order: Vec<String> = first_arrivals(&deliveries)
            .iter()
            .map(Delivery::event_type)
            .collect();
        assert_eq!(
            order[..17],
            [
                "token.created",
                "token.read",
                "token.updated",
                "token.created",
                "token.created",
                "token.created",
                "application.created",
                "application.updated",
                "application.key.created",
                "application.key.deleted",
                "application.deleted",
                "proxy.created",
                "proxy.updated",
                "proxy.deleted",
                "token.deleted",
                "token.created",
                "token.created",
            ],
            "{order:?}"
        );
        let bulk_ids: Vec<&str> = bulk
            .as_array()
            .expect("array")
            .iter()
            .map(|t| t["id"].as_str().expect("id"))
            .collect();
        let arrived: Vec<String> = first_arrivals(&deliveries)[3..6]
            .iter()
            .map(|d| {
                d.json()["event"]["data"]["token"]["id"]
                    .as_str()
                    .expect("token id")
                    .to_string()
            })
            .collect();
        assert_eq!(
            arrived, bulk_ids,
            "one token.created per token of a bulk call, in order"
        );
        // An event carries ids, never data.
        let text: String = deliveries
            .iter()
            .map(|d| String::from_utf8_lossy(&d.body).into_owned())
            .collect();
        for secret in ["secret-", "4242424242424242", "\"123\"", "\"k\""] {
            assert!(!text.contains(secret), "{secret} reached the receiver");
        }
        let listed = s.ok("GET", &format!("/webhooks/{hook}"), None);
        assert_eq!(listed["status"], "enabled");
    });
}

#[test]
fn a_receiver_that_was_down_gets_every_event_on_return() {
    on_both(|dir, database| {
        let receiver = Receiver::start();
        receiver.answer(503);
        let s = Served::start(dir, database, &[]);
        s.hook(&receiver.url, &["token.created"]);
        let tokens: Vec<String> = (0..5).map(|i| s.token(&format!("t{i}"))).collect();
        receiver.wait_for(WITHIN, "retries", |seen| seen.len() >= 2);
        assert!(receiver.accepted().is_empty());
        receiver.answer(200);
        receiver.wait_for(WITHIN, "the backlog", |seen| {
            first_arrivals(seen).len() == 5
        });
        let arrived: Vec<String> = arrived_tokens(&receiver);
        assert_eq!(arrived, tokens, "in the order they were created");
        let failed: BTreeSet<String> = receiver
            .deliveries()
            .iter()
            .filter(|d| d.answered == 503)
            .map(|d| {
                d.json()["event"]["data"]["token"]["id"]
                    .as_str()
                    .expect("id")
                    .to_string()
            })
            .collect();
        assert_eq!(
            failed.into_iter().collect::<Vec<_>>(),
            vec![tokens[0].clone()],
            "nothing after a failed event is sent before it"
        );
        duplicates_are_re_sends(&receiver.deliveries());
    });
}

#[test]
fn a_kill_9_of_the_deliverer_loses_no_event() {
    on_both(|dir, database| {
        let receiver = Receiver::start();
        receiver.delay(Duration::from_millis(150));
        let extra = ["--webhook-lease-seconds", "2", "--webhook-timeout", "1"];
        let mut s = Served::start(dir, database, &extra);
        s.hook(&receiver.url, &["token.created"]);
        let tokens: Vec<String> = (0..20).map(|i| s.token(&format!("k{i}"))).collect();
        receiver.wait_for(WITHIN, "a few deliveries", |seen| seen.len() >= 3);
        s.api.child.kill().expect("kill -9");
        s.api.child.wait().expect("reaped");
        let delivered_before = first_arrivals(&receiver.deliveries()).len();
        assert!(
            delivered_before < 20,
            "the kill came mid-way ({delivered_before} delivered)"
        );
        receiver.delay(Duration::ZERO);
        let restarted = serve(
            dir,
            &args(database, &extra),
            &[("TESSERA_MASTER_KEY", MASTER_KEY)],
        );
        receiver.wait_for(WITHIN, "every event after the restart", |seen| {
            first_arrivals(seen).len() == 20
        });
        let arrived: Vec<String> = arrived_tokens(&receiver);
        assert_eq!(arrived, tokens);
        duplicates_are_re_sends(&receiver.deliveries());
        drop(restarted);
    });
}

#[test]
fn postgres_two_processes_deliver_each_event_once() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let Some(pg) = rt.block_on(TestDatabase::postgres()) else {
        eprintln!("skipped: set TESSERA_TEST_DATABASE_URL to run the PostgreSQL tests");
        return;
    };
    let DatabaseUrl::Postgres { url } = &pg.url else {
        unreachable!("a PostgreSQL database")
    };
    let receiver = Receiver::start();
    let (a_dir, b_dir) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let a = Served::start(a_dir.path(), Some(url), &[]);
    let b_api = serve(
        b_dir.path(),
        &args(Some(url), &["--no-bootstrap"]),
        &[("TESSERA_MASTER_KEY", MASTER_KEY)],
    );
    let b = Served {
        api: b_api,
        admin: a.admin.clone(),
    };
    a.hook(&receiver.url, &["token.created"]);
    for i in 0..20 {
        if i % 2 == 0 {
            a.token(&format!("a{i}"))
        } else {
            b.token(&format!("b{i}"))
        };
    }
    receiver.wait_for(WITHIN, "20 events", |seen| first_arrivals(seen).len() == 20);
    std::thread::sleep(Duration::from_secs(2));
    let deliveries = receiver.deliveries();
    assert_eq!(
        deliveries.len(),
        20,
        "each event delivered once, by one of the two processes"
    );
}

#[test]
fn a_failing_webhook_is_disabled_and_stays_disabled_until_enabled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = Receiver::start();
    receiver.answer(500);
    let s = Served::start(dir.path(), None, &["--webhook-disable-after", "3"]);
    let hook = s.hook(&receiver.url, &["token.created"]);
    let first = s.token("one");
    let deadline = std::time::Instant::now() + WITHIN;
    while s.ok("GET", &format!("/webhooks/{hook}"), None)["status"] != "disabled" {
        assert!(std::time::Instant::now() < deadline, "not disabled");
        std::thread::sleep(Duration::from_millis(200));
    }
    let events = s.ok("GET", "/audit-events?action=webhook.disabled", None);
    assert_eq!(events["data"][0]["resource_ids"][0], hook, "{events}");
    assert_eq!(events["data"][0]["actor"], "system");
    let attempts = receiver.deliveries().len();
    let second = s.token("two");
    receiver.answer(200);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        receiver.deliveries().len(),
        attempts,
        "nothing is sent to a disabled webhook"
    );
    let body = json!({"name": "receiver", "url": receiver.url, "events": ["token.created"], "status": "enabled"});
    s.ok("PUT", &format!("/webhooks/{hook}"), Some(body));
    receiver.wait_for(WITHIN, "the backlog after enabling", |seen| {
        first_arrivals(seen).len() == 2
    });
    let arrived: Vec<String> = arrived_tokens(&receiver);
    assert_eq!(arrived, [first, second]);
}

#[test]
fn without_a_trail_webhooks_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = Receiver::start();
    {
        let s = Served::start(dir.path(), None, &[]);
        s.hook(&receiver.url, &["token.created"]);
    }
    let mut c = crate::cli::command(dir.path());
    c.args([
        "serve",
        "--audit-durability",
        "off",
        "--no-console",
        "--listen",
        "127.0.0.1:0",
    ])
    .env("TESSERA_MASTER_KEY", MASTER_KEY);
    let out = c.output().expect("run");
    assert!(!out.status.success(), "start-up is refused");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--audit-durability off records no events"),
        "{err}"
    );
    let other = tempfile::tempdir().expect("tempdir");
    let s = Served::start(other.path(), None, &["--audit-durability", "off"]);
    let body = json!({"name": "r", "url": receiver.url, "events": ["token.created"]});
    let (status, answer) = s.call("POST", "/webhooks", Some(body));
    assert_eq!(status, 409, "{answer}");
}

/// A receiver's answer can cost its own webhook one attempt, nothing more: a redirect is a
/// failure and is not followed, a body that never ends is not read, a receiver that never
/// answers times out; meanwhile another tenant's webhook is delivered at once.
#[test]
fn a_receivers_answer_cannot_redirect_stall_or_flood_the_deliverer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = Served::start(dir.path(), None, &["--webhook-timeout", "1"]);
    let target = Receiver::start();
    let redirecting = Receiver::start();
    redirecting.answer_raw(
        302,
        format!(
            "HTTP/1.1 302 Found\r\nlocation: {}\r\ncontent-length: 0\r\n\r\n",
            target.url
        )
        .as_bytes(),
    );
    let flooding = Receiver::start();
    flooding.answer_raw(
        200,
        b"HTTP/1.1 200 OK\r\ncontent-length: 100000000000\r\n\r\nxxxxxxxx",
    );
    let silent = Receiver::start();
    silent.delay(Duration::from_secs(30));
    for r in [&redirecting, &flooding, &silent] {
        s.hook(&r.url, &["token.created"]);
    }
    // Another tenant, with a receiver that answers at once.
    let (b_admin, b_tenant) = second_tenant(dir.path());
    let as_b = |method: &str, path: &str, body: Value| {
        let (status, answer) = call(
            method,
            &format!("{}{path}", s.api.base),
            &[("SVC-API-KEY", &b_admin)],
            Some(body),
        );
        assert_eq!(status, 201, "{answer}");
        answer
    };
    let fast = Receiver::start();
    as_b(
        "POST",
        "/webhooks",
        json!({"name": "fast", "url": fast.url, "events": ["token.created"]}),
    );
    let first = s.token("one");
    let theirs = as_b(
        "POST",
        "/tokens",
        json!({"type": "token", "data": "theirs"}),
    )["id"]
        .as_str()
        .expect("id")
        .to_string();
    fast.wait_for(
        Duration::from_secs(5),
        "the other tenant's event, at once",
        |seen| !seen.is_empty(),
    );
    assert_eq!(
        fast.deliveries()[0].json()["event"]["tenant_id"],
        b_tenant.as_str()
    );
    assert_eq!(
        fast.deliveries()[0].json()["event"]["data"]["token"]["id"],
        theirs.as_str()
    );
    redirecting.wait_for(WITHIN, "a retried redirect", |seen| seen.len() >= 2);
    assert!(
        target.deliveries().is_empty(),
        "the redirect was not followed"
    );
    let ids: BTreeSet<String> = redirecting
        .deliveries()
        .iter()
        .map(Delivery::event_id)
        .collect();
    assert_eq!(ids.len(), 1, "the same event retried, nothing after it");
    flooding.wait_for(WITHIN, "the flooded receiver", |seen| !seen.is_empty());
    assert_eq!(
        flooding.deliveries()[0].json()["event"]["data"]["token"]["id"],
        first.as_str()
    );
    silent.wait_for(WITHIN, "a retried silent receiver", |seen| seen.len() >= 2);
    assert_eq!(
        fast.deliveries().len(),
        1,
        "the other tenant's webhook got its own event only"
    );
    let metrics = http_client::get(&format!("{}/metrics", s.api.base), &[]).text();
    for name in [
        "tessera_webhook_deliveries",
        "tessera_webhook_failures",
        "tessera_webhook_lag_events",
        "tessera_webhooks_delivering",
    ] {
        assert!(metrics.contains(name), "{name} on /metrics");
    }
    assert!(
        !metrics.contains("127.0.0.1"),
        "no receiver URL on /metrics"
    );
}

/// A webhook stored by a process that allows private destinations is not trusted by one that
/// does not: its deliveries to a loopback receiver are refused at connect time, and fail.
#[test]
fn a_private_receiver_is_refused_by_a_process_without_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = Receiver::start();
    let admin = {
        let s = Served::start(dir.path(), None, &[]);
        s.hook(&receiver.url, &["token.created"]);
        s.admin.clone()
    };
    let strict = serve(
        dir.path(),
        &["--sweep-interval", "0.2"],
        &[("TESSERA_MASTER_KEY", MASTER_KEY)],
    );
    let s = Served { api: strict, admin };
    s.token("refused");
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        receiver.deliveries().is_empty(),
        "nothing reached the loopback receiver"
    );
    let metrics = http_client::get(&format!("{}/metrics", s.api.base), &[]).text();
    let failures = metrics
        .lines()
        .find(|l| l.starts_with("tessera_webhook_failures{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(
        failures >= 1.0,
        "the refused attempts are counted:\n{metrics}"
    );
}

/// A second tenant on the database of the server in `dir`: its admin key and id.
fn second_tenant(dir: &Path) -> (String, String) {
    let out = crate::cli::run(
        dir,
        &["tenants", "create", "--name", "other"],
        &[("TESSERA_MASTER_KEY", MASTER_KEY)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: Value = serde_json::from_slice(&out.stdout).expect("tenant JSON");
    (
        made["api_key"].as_str().expect("api_key").to_string(),
        made["tenant_id"]
            .as_str()
            .or(made["id"].as_str())
            .expect("tenant id")
            .to_string(),
    )
}

/// A bulk call's events resume where the kill stopped them: the cursor counts the events of
/// one audit event already sent, so at most the one in flight is sent twice.
#[test]
fn a_bulk_call_resumes_where_a_kill_stopped_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = Receiver::start();
    receiver.delay(Duration::from_millis(100));
    let extra = ["--webhook-lease-seconds", "2", "--webhook-timeout", "1"];
    let mut s = Served::start(dir.path(), None, &extra);
    s.hook(&receiver.url, &["token.created"]);
    let bulk: Vec<Value> = (0..30)
        .map(|i| json!({"type": "token", "data": format!("bulk-{i}")}))
        .collect();
    let made = s.ok("POST", "/tokenize", Some(Value::Array(bulk)));
    let ids: Vec<String> = made
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["id"].as_str().expect("id").to_string())
        .collect();
    receiver.wait_for(WITHIN, "a few of the bulk's events", |seen| seen.len() >= 5);
    s.api.child.kill().expect("kill -9");
    s.api.child.wait().expect("reaped");
    let before = receiver.deliveries().len();
    assert!(before < 30, "the kill came mid-way ({before} sent)");
    receiver.delay(Duration::ZERO);
    let _restarted = serve(
        dir.path(),
        &args(None, &extra),
        &[("TESSERA_MASTER_KEY", MASTER_KEY)],
    );
    receiver.wait_for(WITHIN, "the rest of the bulk", |seen| {
        first_arrivals(seen).len() == 30
    });
    let arrived: Vec<String> = arrived_tokens(&receiver);
    assert_eq!(arrived, ids, "in the bulk call's order");
    let total = receiver.deliveries().len();
    assert!(
        total <= 31,
        "at most the event in flight is sent again ({total} POSTs)"
    );
    duplicates_are_re_sends(&receiver.deliveries());
}
