//! Property-based fuzzing of request decoding on every management endpoint: arbitrary bodies
//! (JSON of any shape, malformed text, raw bytes) and arbitrary query strings must always get a
//! 4xx problem+json or a success — never a 5xx, never a panic.
//!
//! Runs a couple of seconds by default; `FUZZ_SECONDS=600 cargo test -p tessera-http --test
//! fuzz_api -- --nocapture` runs each target for ten minutes (`just fuzz`).

use std::time::{Duration, Instant};

use actix_web::{http::Method, test as actix_test};
use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestRng, TestRunner},
};
use serde_json::{json, Value};
use tessera_testkit::api::{send_raw, state, tenant};
use tessera_testkit::db::TestDatabase;

fn budget() -> Duration {
    Duration::from_secs(
        std::env::var("FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2),
    )
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("token"),
            Just("card"),
            Just("bank"),
            Just("private"),
            Just("management"),
            Just("/pci/"),
            Just("token:read"),
            Just("4242424242424242"),
            Just("https://api.example.com"),
            Just("*.example.com:443"),
            Just("[::1]:8443"),
            Just("{{ x }}")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("name".to_string()),
                    Just("type".to_string()),
                    Just("data".to_string()),
                    Just("permissions".to_string()),
                    Just("rules".to_string()),
                    Just("metadata".to_string()),
                    Just("containers".to_string()),
                    Just("destination_url".to_string()),
                    Just("configuration".to_string()),
                    Just("application".to_string()),
                    Just("id".to_string()),
                    Just("request_transform".to_string()),
                    Just("code".to_string()),
                    Just("require_auth".to_string()),
                    Just("priority".to_string()),
                    Just("container".to_string()),
                    Just("number".to_string()),
                    Just("destinations".to_string()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body: JSON of any shape, or bytes that are not JSON at all.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => json_value().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => ".{0,40}".prop_map(String::into_bytes),
    ]
}

fn query() -> impl Strategy<Value = String> {
    let pair = (
        prop_oneof![
            Just("page"),
            Just("size"),
            Just("id"),
            Just("type"),
            Just("name"),
            Just("metadata.k"),
            Just("action"),
            Just("actor"),
            Just("from"),
            Just("resource_id"),
            Just("x")
        ],
        prop_oneof![
            ".{0,8}".boxed(),
            any::<i64>().prop_map(|i| i.to_string()).boxed(),
            Just("card".to_string()).boxed()
        ],
    );
    prop::collection::vec(pair, 0..4).prop_map(|pairs| {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            s.append_pair(k, &v);
        }
        s.finish()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn every_endpoint_decodes_arbitrary_input_without_a_server_error() {
    let rt = runtime();
    let _runtime = rt.enter();
    let db = rt.block_on(TestDatabase::sqlite());
    fuzz_endpoints(&rt, &db);
}

/// The same on PostgreSQL, which refuses some text SQLite stores (NUL characters): such input
/// must be a 400 there too, never a 500.
mod postgres {
    use super::*;

    #[test]
    fn every_endpoint_decodes_arbitrary_input_without_a_server_error() {
        let rt = runtime();
        let _runtime = rt.enter();
        match rt.block_on(TestDatabase::postgres()) {
            Some(db) => fuzz_endpoints(&rt, &db),
            None if tessera_testkit::db::postgres_required() => {
                panic!("CI=true but TESSERA_TEST_DATABASE_URL is unset: PostgreSQL tests must run")
            }
            None => eprintln!("skipped: set TESSERA_TEST_DATABASE_URL to run PostgreSQL tests"),
        }
    }
}

fn fuzz_endpoints(rt: &tokio::runtime::Runtime, db: &TestDatabase) {
    let st = state(db, 1024 * 1024);
    let t = rt.block_on(tenant(&st, "fuzz"));
    let app = rt.block_on(actix_test::init_service(tessera_http::app(st)));
    let key = t.admin_key.clone();
    // Real ids, so path-addressed endpoints get past the lookup sometimes.
    let token = rt.block_on(send_raw(
        &app,
        actix_test::TestRequest::post()
            .uri("/tokens")
            .insert_header(("SVC-API-KEY", key.as_str()))
            .set_json(json!({"type": "token", "data": 1})),
    ));
    let token_id = token.body["id"].as_str().expect("id").to_string();
    let proxy = rt.block_on(send_raw(
        &app,
        actix_test::TestRequest::post()
            .uri("/proxies")
            .insert_header(("SVC-API-KEY", key.as_str()))
            .set_json(json!({"name": "p", "destination_url": "https://a.example.com"})),
    ));
    let proxy_id = proxy.body["id"].as_str().expect("id").to_string();
    let writes: Vec<(Method, String)> = vec![
        (Method::POST, "/applications".into()),
        (Method::POST, "/tokens".into()),
        (Method::POST, "/tokenize".into()),
        (Method::POST, "/tokens/search".into()),
        (Method::PATCH, format!("/tokens/{token_id}")),
        (Method::POST, format!("/tokens/{token_id}/children")),
        (Method::POST, "/proxies".into()),
        (Method::PUT, format!("/proxies/{proxy_id}")),
    ];
    let reads = ["/applications", "/tokens", "/proxies", "/audit-events"];
    let reads: Vec<String> = reads
        .iter()
        .map(|s| s.to_string())
        .chain([format!("/tokens/{token_id}/children")])
        .collect();

    let deadline = Instant::now() + budget();
    let mut cases = 0u64;
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut round = 0u64;
    while Instant::now() < deadline {
        // A fresh runner and seed each round: a runner stops after its configured successes.
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&round.to_le_bytes());
        seed[8..24].copy_from_slice(&started.to_le_bytes());
        round += 1;
        let config = Config {
            cases: 64,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
            .run(
                &(0..writes.len(), body(), 0..reads.len(), query()),
                |(w, bytes, r, q)| {
                    let (method, uri) = &writes[w];
                    let req = actix_test::TestRequest::default()
                        .method(method.clone())
                        .uri(uri)
                        .insert_header(("SVC-API-KEY", key.as_str()))
                        .insert_header(("content-type", "application/json"))
                        .set_payload(bytes.clone());
                    let reply = rt.block_on(send_raw(&app, req));
                    prop_assert!(
                        reply.status.as_u16() < 500,
                        "{} {} -> {}: {}",
                        method,
                        uri,
                        reply.status,
                        String::from_utf8_lossy(&bytes)
                    );
                    if reply.status.as_u16() >= 400 {
                        prop_assert_eq!(
                            reply
                                .headers
                                .get("content-type")
                                .and_then(|v| v.to_str().ok()),
                            Some("application/problem+json")
                        );
                    }
                    let uri = format!("{}?{q}", reads[r]);
                    let reply = rt.block_on(send_raw(
                        &app,
                        actix_test::TestRequest::get()
                            .uri(&uri)
                            .insert_header(("SVC-API-KEY", key.as_str())),
                    ));
                    prop_assert!(reply.status.as_u16() < 500, "GET {uri} -> {}", reply.status);
                    Ok(())
                },
            )
            .expect("no input makes the API fail");
        cases += 64;
    }
    eprintln!("fuzzed {cases} bodies and queries in {:?}", budget());
}
