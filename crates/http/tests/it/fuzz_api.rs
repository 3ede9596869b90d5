//! Property-based fuzzing of request decoding on every management endpoint: arbitrary bodies
//! (JSON of any shape, malformed text, raw bytes) and arbitrary query strings must always get a
//! 4xx problem+json or a success — never a 5xx, never a panic.
//!
//! Runs a couple of seconds by default; `FUZZ_SECONDS=600 cargo test -p tessera-http --test
//! fuzz_api -- --nocapture` runs each target for ten minutes (`just fuzz`).

use actix_web::{
    dev::{Service, ServiceResponse},
    http::Method,
    test as actix_test, Error,
};
use proptest::prelude::*;
use serde_json::{json, Value};
use tessera_testkit::api::{send_raw, state, tenant, Caller};
use tessera_testkit::{db::TestDatabase, fuzz::fuzz_in_rounds_of};

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

/// What the fuzzer sends to: bodies to the writes, query strings to the reads. Real ids, so
/// path-addressed endpoints get past the lookup sometimes.
struct Targets {
    writes: Vec<(Method, String)>,
    reads: Vec<String>,
}

async fn targets<S, B>(app: &S, key: &str) -> Targets
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: actix_web::body::MessageBody,
{
    let c = Caller::new(app, key);
    let token = c.post("/tokens", json!({"type": "token", "data": 1})).await;
    let token_id = token.body["id"].as_str().expect("id").to_string();
    let proxy = json!({"name": "p", "destination_url": "https://a.example.com"});
    let proxy = c.post("/proxies", proxy).await;
    let proxy_id = proxy.body["id"].as_str().expect("id").to_string();
    let writes = vec![
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
    let reads = reads
        .iter()
        .map(|s| s.to_string())
        .chain([format!("/tokens/{token_id}/children")])
        .collect();
    Targets { writes, reads }
}

/// `bytes` as a JSON body to a write: a success or a problem+json 4xx, never a 5xx.
async fn write_answers_without_a_server_error<S, B>(
    app: &S,
    key: &str,
    (method, uri): &(Method, String),
    bytes: Vec<u8>,
) -> Result<(), TestCaseError>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: actix_web::body::MessageBody,
{
    let req = actix_test::TestRequest::default()
        .method(method.clone())
        .uri(uri)
        .insert_header(("SVC-API-KEY", key))
        .insert_header(("content-type", "application/json"))
        .set_payload(bytes.clone());
    let reply = send_raw(app, req).await;
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
    Ok(())
}

fn fuzz_endpoints(rt: &tokio::runtime::Runtime, db: &TestDatabase) {
    let st = state(db, 1024 * 1024);
    let t = rt.block_on(tenant(&st, "fuzz"));
    let app = rt.block_on(actix_test::init_service(tessera_http::app(st)));
    let key = t.admin_key.as_str();
    let Targets { writes, reads } = rt.block_on(targets(&app, key));
    let strategy = (0..writes.len(), body(), 0..reads.len(), query());
    // 64 cases a round: each case is two requests, and the budget is checked between rounds.
    fuzz_in_rounds_of(
        64,
        "no input makes the API fail",
        strategy,
        |(w, bytes, r, q)| {
            rt.block_on(write_answers_without_a_server_error(
                &app, key, &writes[w], bytes,
            ))?;
            let uri = format!("{}?{q}", reads[r]);
            let reply = rt.block_on(Caller::new(&app, key).get(&uri));
            prop_assert!(reply.status.as_u16() < 500, "GET {uri} -> {}", reply.status);
            Ok(())
        },
    );
}
