//! Runaway transforms: the quadratic string search that once ran for minutes
//! answers in time, a proxy whose transform ran past its time limit is quarantined (503
//! `proxy_error` with `Retry-After`, doubling), a transform stuck in native code is killed in
//! process isolation, and inline, a spinning transform leaves the other serving core alone.

use std::time::{Duration, Instant};

use http::Method;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Isolation, Options, Reply},
    isolation_backend_tests,
};

isolation_backend_tests!(
    the_quadratic_search_of_the_finding_answers_in_time,
    a_timed_out_transform_quarantines_its_proxy,
);

backend_tests!(
    a_transform_stuck_in_native_code_is_stopped_in_process_isolation,
    one_tenants_slow_transforms_cannot_quarantine_another_tenants_proxy,
    waiting_for_a_sandbox_slot_is_a_503_that_does_not_quarantine,
);

/// The transform of the finding, verbatim: `indexOf` with a 1e6-character needle in a
/// 2e6-character haystack (~40 s of native code before), keeping the request's headers.
const FINDING: &str = "module.exports = async (req) => ({ body: String('a'.repeat(2e6).indexOf('a'.repeat(1e6)+'b')), headers: req.args.headers });";

/// A transform that spins until its deadline.
const SPIN: &str = "module.exports = async () => { while (true) {} };";

async fn with_request_transform(g: &Harness, name: &str, code: &str) -> String {
    g.proxy(
        json!({"name": name, "destination_url": g.upstream_url(), "require_auth": false,
        "request_transform": {"code": code}}),
    )
    .await
    .1
}

/// A proxy to the upstream with no transform and no `require_auth`: its key.
async fn anonymous(g: &Harness) -> String {
    g.proxy(json!({"name": "plain", "destination_url": g.upstream_url(), "require_auth": false}))
        .await
        .1
}

async fn post(g: &Harness, pkey: &str) -> Reply {
    g.call(Method::POST, "/proxy", &[("svc-proxy-key", pkey)], "")
        .await
}

async fn the_quadratic_search_of_the_finding_answers_in_time(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_with(
        db,
        Options {
            engine: tessera_transform_runtime::EngineConfig {
                time_limit: Duration::from_secs(5),
                ..Options::default().with_isolation(mode).engine
            },
            ..Options::default().with_isolation(mode)
        },
    )
    .await;
    let pkey = with_request_transform(&g, "finding", FINDING).await;
    let r = post(&g, &pkey).await.expect(200);
    assert_eq!(
        r.echoed()["body"],
        json!("-1"),
        "the search ran to its answer"
    );
    post(&g, &pkey).await.expect(200);
}

async fn a_timed_out_transform_quarantines_its_proxy(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let spinning = with_request_transform(&g, "spin", SPIN).await;
    let other = anonymous(&g).await;
    let r = post(&g, &spinning).await.proxy_error(500);
    assert!(r.detail().contains("time limit"), "{}", r.detail());

    let r = post(&g, &spinning).await.proxy_error(503);
    assert_eq!(r.header("retry-after"), Some("1"), "first back-off: 1 s");
    assert!(r.detail().contains("time limit"), "{}", r.detail());
    g.call(Method::GET, "/proxy", &[("svc-proxy-key", &other)], "")
        .await
        .expect(200);

    // After the back-off it runs again; a second timeout doubles it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    post(&g, &spinning).await.proxy_error(500);
    let r = post(&g, &spinning).await.proxy_error(503);
    assert_eq!(r.header("retry-after"), Some("2"), "second back-off: 2 s");
}

/// In native code the interrupt handler does not reach (a regular expression with a long
/// literal: ~5 s past a 1 s limit when run inline), process isolation kills the sandbox after
/// the limit and the grace: the call answers 500 then, and the proxy is quarantined.
async fn a_transform_stuck_in_native_code_is_stopped_in_process_isolation(db: &TestDatabase) {
    let g = Harness::start_in(db, Isolation::Process).await;
    let stuck = with_request_transform(
        &g,
        "stuck",
        "module.exports = async () => ({ body: String('a'.repeat(2e6).search('a'.repeat(1e6) + 'b')) });",
    )
    .await;
    let started = Instant::now();
    post(&g, &stuck).await.proxy_error(500);
    let took = started.elapsed();
    let bound = Options::default().engine.time_limit + Options::default().engine.grace;
    assert!(
        took < bound + Duration::from_secs(2),
        "answered at the limit and grace ({bound:?}), took {took:?}"
    );
    post(&g, &stuck).await.proxy_error(503);
    let plain = anonymous(&g).await;
    g.call(Method::GET, "/proxy", &[("svc-proxy-key", &plain)], "")
        .await
        .expect(200);
}

/// A transform stuck in native code the interrupt cannot reach: it holds its sandbox slot
/// until the process is killed at the time limit plus the grace.
const STUCK: &str =
    "module.exports = async () => ({ body: String('a'.repeat(2e6).search('a'.repeat(1e6) + 'b')) });";

/// A second tenant with a proxy whose request transform returns the body unchanged: its key.
async fn other_tenants_proxy(g: &Harness) -> String {
    let tenant = g.vault.create_tenant("other").await.expect("tenant");
    let admin = g
        .vault
        .authenticate(Some(tenant.api_key.expose()))
        .await
        .expect("admin");
    let input = serde_json::from_value(json!({"name": "fast", "destination_url": g.upstream_url(),
        "require_auth": false,
        "request_transform": {"code": "module.exports = async (req) => ({ body: req.args.body });"}}))
    .expect("proxy input");
    let proxy = g.vault.create_proxy(&admin, input).await.expect("proxy");
    proxy.key.expose().clone()
}

fn process_options(processes: usize, queue_timeout: Duration) -> Options {
    let mut options = Options::default().with_isolation(Isolation::Process);
    options.engine.processes_per_thread = processes;
    options.engine.queue_timeout = queue_timeout;
    options
}

/// Tenant A fills a thread's sandbox slots with transforms stuck in
/// native code (each holds its slot until killed, at the limit plus the grace). Tenant B's
/// transform still runs at once (A may hold all slots but one), within its own time limit
/// counted from its start, and B's proxy is never quarantined.
async fn one_tenants_slow_transforms_cannot_quarantine_another_tenants_proxy(db: &TestDatabase) {
    let g = Harness::start_with(db, process_options(2, Duration::from_secs(5))).await;
    let stuck = with_request_transform(&g, "stuck", STUCK).await;
    let fast = other_tenants_proxy(&g).await;
    // Start B's process once, so that its first call below measures only the queue.
    g.call(Method::POST, "/proxy", &[("svc-proxy-key", &fast)], "warm")
        .await
        .expect(200);
    let flood: Vec<_> = (0..3)
        .map(|_| {
            let (base, key) = (g.base.clone(), stuck.clone());
            tokio::spawn(async move { raw_post(&base, &key).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(150)).await;
    for _ in 0..3 {
        let r = g
            .call(Method::POST, "/proxy", &[("svc-proxy-key", &fast)], "b")
            .await;
        assert_eq!(
            r.status, 200,
            "tenant B is served beside A's flood: {}",
            r.body
        );
    }
    for f in flood {
        let status = f.await.expect("flood");
        assert!(
            status == 500 || status == 503,
            "A's own transforms time out (or find A quarantined): {status}"
        );
    }
    g.call(Method::POST, "/proxy", &[("svc-proxy-key", &fast)], "after")
        .await
        .expect(200);
}

/// With a single slot there is no reserve: tenant B waits for A's stuck transform. A wait that
/// outlasts the queue timeout answers 503 with `Retry-After` (the transform never started),
/// and B's proxy is not quarantined: its next call runs.
async fn waiting_for_a_sandbox_slot_is_a_503_that_does_not_quarantine(db: &TestDatabase) {
    let g = Harness::start_with(db, process_options(1, Duration::from_millis(200))).await;
    let stuck = with_request_transform(&g, "stuck", STUCK).await;
    let fast = other_tenants_proxy(&g).await;
    let hog = {
        let (base, key) = (g.base.clone(), stuck.clone());
        tokio::spawn(async move { raw_post(&base, &key).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let r = g
        .call(Method::POST, "/proxy", &[("svc-proxy-key", &fast)], "b")
        .await
        .proxy_error(503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.detail().contains("free in time"), "{}", r.detail());
    assert_eq!(hog.await.expect("hog"), 500, "A's transform timed out");
    let r = g
        .call(Method::POST, "/proxy", &[("svc-proxy-key", &fast)], "b")
        .await;
    assert_eq!(r.status, 200, "B's proxy is not quarantined: {}", r.body);
}

/// `POST /proxy` with `key` on a connection of its own: the status.
async fn raw_post(base: &str, key: &str) -> u16 {
    let addr = base.trim_start_matches("http://");
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let req = http::Request::post("/proxy")
        .header("host", addr)
        .header("svc-proxy-key", key)
        .body(Empty::<Bytes>::new())
        .expect("request");
    sender
        .send_request(req)
        .await
        .expect("response")
        .status()
        .as_u16()
}

/// One request on its own connection: the time to its answer.
async fn timed_get(addr: &str, pkey: &str) -> Duration {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let req = http::Request::get("/proxy")
        .header("host", addr)
        .header("svc-proxy-key", pkey)
        .body(Empty::<Bytes>::new())
        .expect("request");
    let started = Instant::now();
    let res = sender.send_request(req).await.expect("response");
    assert_eq!(res.status(), 200);
    let _ = res.into_body().collect().await;
    started.elapsed()
}

/// Inline, a transform spinning until its deadline holds its own serving thread; requests on
/// connections the other thread serves are not delayed by it. Connections go to the two
/// threads by the kernel's `SO_REUSEPORT` hash, so 16 of them all landing on the spinning
/// thread is a 1-in-65536 event: the fastest must answer in a small fraction of the limit.
#[tokio::test]
async fn inline_a_spinning_transform_leaves_the_other_core_serving() {
    let db = TestDatabase::sqlite().await;
    let limit = Duration::from_secs(2);
    let mut options = Options {
        workers: 2,
        ..Options::default()
    };
    options.engine.time_limit = limit;
    let g = Harness::start_with(&db, options).await;
    let spinning = with_request_transform(&g, "spin", SPIN).await;
    let plain = anonymous(&g).await;
    let addr = g.base.trim_start_matches("http://").to_string();
    // Warm both threads' caches for the plain proxy.
    for _ in 0..8 {
        timed_get(&addr, &plain).await;
    }
    let spin = {
        let (addr, pkey) = (addr.clone(), spinning.clone());
        tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(&addr)
                .await
                .expect("connect");
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
            tokio::spawn(conn);
            let req = http::Request::post("/proxy")
                .header("host", &addr)
                .header("svc-proxy-key", &pkey)
                .body(Empty::<Bytes>::new())
                .expect("request");
            sender.send_request(req).await.expect("response").status()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut latencies = Vec::new();
    let probes: Vec<_> = (0..16)
        .map(|_| {
            let (addr, pkey) = (addr.clone(), plain.clone());
            tokio::spawn(async move { timed_get(&addr, &pkey).await })
        })
        .collect();
    for probe in probes {
        latencies.push(probe.await.expect("probe"));
    }
    latencies.sort();
    assert_eq!(spin.await.expect("spin"), 500);
    eprintln!("latencies during an inline spin (limit {limit:?}): {latencies:?}");
    assert!(
        latencies[0] < limit / 4,
        "the other core kept serving: fastest {:?}",
        latencies[0]
    );
}
