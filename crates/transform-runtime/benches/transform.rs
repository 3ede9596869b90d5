//! One warm invocation of the benchmark peers' request transform (`transform_request.js`) on a
//! 1 KiB JSON body, measured from the async caller: building the input, running the transform,
//! getting the encoded body back. Inline (on the calling thread) and in a sandbox process.
//!
//! `cargo bench -p tessera-transform-runtime` (process isolation uses the
//! `tessera-transform-sandbox` binary cargo builds next to the benchmark).

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use tessera_transform_runtime::{
    Args, Body, EngineConfig, HostError, HostOp, Input, Isolation, SandboxCommand, TransformEngine,
};

/// The peers' transform, verbatim (kept in sync with ../shared/bench-peers/transform_request.js).
const TRANSFORM_REQUEST: &str = "module.exports = async function (req) {
  const { body, headers } = req.args;
  body.merchant = req.configuration.MERCHANT_ID;
  headers['authorization'] = 'Bearer ' + req.configuration.API_SECRET;
  return { body, headers };
};";

type NoHost = fn(HostOp, Value) -> std::future::Ready<Result<Value, HostError>>;

fn one_kib_body() -> String {
    let items: Vec<Value> = (0..24)
        .map(|i| json!({"sku": format!("sku_{i:04}"), "qty": i, "price": 1000 + i}))
        .collect();
    let body = json!({"card": {"number": "4242424242424242", "cvc": "123"}, "amount": 1000, "currency": "usd", "items": items}).to_string();
    assert!(
        (900..1200).contains(&body.len()),
        "about 1 KiB: {}",
        body.len()
    );
    body
}

fn input(body: Body) -> Input {
    Input {
        args: Args {
            body,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("x-request-id".into(), "r1".into()),
            ],
            method: Some("POST".into()),
            path: Some("/charges".into()),
            query: Some(String::new()),
            status: None,
        },
        configuration: vec![
            ("MERCHANT_ID".into(), "m_123".into()),
            ("API_SECRET".into(), "sk_test_abc".into()),
        ],
    }
}

/// The sandbox executable next to this benchmark (`target/release/`).
fn sandbox() -> SandboxCommand {
    let exe = std::env::current_exe().expect("bench executable");
    let program = exe
        .ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join("tessera-transform-sandbox"))
        .find(|p| p.is_file())
        .expect(
            "tessera-transform-sandbox (cargo build --release -p tessera-transform-runtime --bins)",
        );
    SandboxCommand {
        program,
        args: Vec::new(),
    }
}

fn runtime_and_engine(isolation: Isolation) -> (tokio::runtime::Runtime, TransformEngine) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = TransformEngine::new(EngineConfig {
        isolation,
        sandbox: (isolation == Isolation::Process).then(sandbox),
        processes_per_thread: 1,
        ..EngineConfig::default()
    })
    .expect("engine");
    (rt, engine)
}

fn bench_mode(c: &mut Criterion, isolation: Isolation, name: &str) {
    let (rt, engine) = runtime_and_engine(isolation);
    let program = engine.compile(TRANSFORM_REQUEST).expect("compiles");
    let body = one_kib_body();
    let run = |input: Input| {
        rt.block_on(engine.run::<NoHost, _>(
            program.clone(),
            "bench-proxy",
            ("t", "p"),
            input,
            None,
        ))
        .expect("runs")
    };
    // Warm the proxy's context (and start the sandbox process) once.
    run(input(Body::Json(body.clone())));
    c.bench_function(name, |b| {
        b.iter(|| run(black_box(input(Body::Json(body.clone())))))
    });
}

fn bench(c: &mut Criterion) {
    bench_mode(
        c,
        Isolation::Inline,
        "inline: transform_request.js, warm, 1 KiB JSON body",
    );
    bench_mode(
        c,
        Isolation::Process,
        "process: transform_request.js, warm, 1 KiB JSON body",
    );
}

/// The floor under any invocation: an empty transform on an empty input.
fn bench_floor(c: &mut Criterion) {
    let (rt, engine) = runtime_and_engine(Isolation::Inline);
    let program = engine
        .compile("module.exports = async () => ({});")
        .expect("compiles");
    let run = || {
        rt.block_on(engine.run::<NoHost, _>(
            program.clone(),
            "floor",
            ("t", "p"),
            input(Body::Text(String::new())),
            None,
        ))
        .expect("runs")
    };
    run();
    c.bench_function("inline: empty transform, warm, empty input (floor)", |b| {
        b.iter(run)
    });
}

criterion_group!(benches, bench, bench_floor);
criterion_main!(benches);
