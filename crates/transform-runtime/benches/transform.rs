//! One warm invocation of the benchmark peers' request transform (`transform_request.js`) on a
//! 1 KiB JSON body, measured from the async caller (queueing to a worker thread included).
//!
//! `cargo bench -p tessera-transform-runtime`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use tessera_transform_runtime::{EngineConfig, HostError, HostOp, TransformEngine};

/// The peers' transform, verbatim (kept in sync with ../shared/bench-peers/transform_request.js).
const TRANSFORM_REQUEST: &str = "module.exports = async function (req) {
  const { body, headers } = req.args;
  body.merchant = req.configuration.MERCHANT_ID;
  headers['authorization'] = 'Bearer ' + req.configuration.API_SECRET;
  return { body, headers };
};";

type NoHost = fn(HostOp, Value) -> std::future::Ready<Result<Value, HostError>>;

fn one_kib_body() -> Value {
    let items: Vec<Value> = (0..24)
        .map(|i| json!({"sku": format!("sku_{i:04}"), "qty": i, "price": 1000 + i}))
        .collect();
    let body = json!({"card": {"number": "4242424242424242", "cvc": "123"}, "amount": 1000, "currency": "usd", "items": items});
    assert!(
        (900..1200).contains(&body.to_string().len()),
        "about 1 KiB: {}",
        body.to_string().len()
    );
    body
}

/// The caller's runtime and an engine with one worker.
fn runtime_and_engine() -> (tokio::runtime::Runtime, TransformEngine) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = TransformEngine::new(EngineConfig {
        workers: 1,
        ..EngineConfig::default()
    })
    .expect("engine");
    (rt, engine)
}

fn bench(c: &mut Criterion) {
    let (rt, engine) = runtime_and_engine();
    let program = engine.compile(TRANSFORM_REQUEST).expect("compiles");
    let input = json!({
        "args": {"body": one_kib_body(), "headers": {"content-type": "application/json", "x-request-id": "r1"},
                 "method": "POST", "path": "/charges", "query": ""},
        "configuration": {"MERCHANT_ID": "m_123", "API_SECRET": "sk_test_abc"},
    });
    // Warm the proxy's context once.
    rt.block_on(engine.run::<NoHost, _>(
        program.clone(),
        "bench-proxy",
        ("t", "p"),
        input.clone(),
        None,
    ))
    .expect("warm-up");
    c.bench_function("transform_request.js, warm, 1 KiB JSON body", |b| {
        b.iter(|| {
            rt.block_on(engine.run::<NoHost, _>(
                program.clone(),
                "bench-proxy",
                ("t", "p"),
                black_box(input.clone()),
                None,
            ))
            .expect("runs")
        })
    });
}

/// The floor under any invocation: an empty transform on an empty input, i.e. the hand-off to
/// a worker thread and back plus the runner's fixed work.
fn bench_floor(c: &mut Criterion) {
    let (rt, engine) = runtime_and_engine();
    let program = engine
        .compile("module.exports = async () => ({});")
        .expect("compiles");
    let run = || {
        rt.block_on(engine.run::<NoHost, _>(program.clone(), "floor", ("t", "p"), json!({}), None))
            .expect("runs")
    };
    run();
    c.bench_function("empty transform, warm, empty input (hand-off floor)", |b| {
        b.iter(run)
    });
}

criterion_group!(benches, bench, bench_floor);
criterion_main!(benches);
