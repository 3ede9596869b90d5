//! `read_body`: the body is read only after the proxy key (and, on `require_auth` proxies, the
//! API key) passed; at most `--max-body-bytes` (413), and within `--body-timeout` of the start
//! of the request (408): a body trickled one byte at a time cannot hold a connection.

use std::time::{Duration, Instant};

use http::Method;
use tessera_gateway::GatewayConfig;
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Options},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

backend_tests!(
    a_body_above_the_limit_is_a_413,
    an_announced_length_above_the_limit_is_a_413_without_reading,
    a_slow_body_is_a_408_within_the_timeout,
    an_unknown_proxy_key_is_refused_before_the_body_is_read,
);

fn options(max_body_bytes: usize, body_timeout: Duration) -> Options {
    let defaults = Options::default();
    Options {
        config: GatewayConfig {
            max_body_bytes,
            body_timeout,
            ..defaults.config.clone()
        },
        ..defaults
    }
}

async fn a_body_above_the_limit_is_a_413(db: &TestDatabase) {
    let g = Harness::start_with(db, options(1024, Duration::from_secs(5))).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let r = g
        .post_json(&pkey, Some(&key), &"x".repeat(2048))
        .await
        .proxy_error(413);
    assert!(r.detail().contains("1024"), "{}", r.detail());
    g.post_json(&pkey, Some(&key), &"x".repeat(1024))
        .await
        .expect(200);
}

/// Sends a request head (and whatever of the body is given) on a raw connection and returns
/// the status line of the answer and how long it took.
async fn raw(
    g: &Harness,
    head: &str,
    trickle: Option<(u8, Duration, usize)>,
) -> (String, Duration) {
    let addr = g.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let started = Instant::now();
    stream.write_all(head.as_bytes()).await.expect("head");
    let (mut reader, mut writer) = stream.into_split();
    let trickler = tokio::spawn(async move {
        if let Some((byte, every, count)) = trickle {
            for _ in 0..count {
                tokio::time::sleep(every).await;
                if writer.write_all(&[byte]).await.is_err() {
                    return;
                }
            }
        }
        // Keep the write half open until the answer is read.
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(writer);
    });
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(20), reader.read(&mut answer))
        .await
        .expect("an answer within 20 s")
        .expect("read");
    trickler.abort();
    let text = String::from_utf8_lossy(&answer[..n]).to_string();
    let status = text.lines().next().unwrap_or("").to_string();
    (status, started.elapsed())
}

async fn an_announced_length_above_the_limit_is_a_413_without_reading(db: &TestDatabase) {
    let g = Harness::start_with(db, options(1024, Duration::from_secs(10))).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let head = format!(
        "POST /proxy HTTP/1.1\r\nhost: x\r\nsvc-proxy-key: {pkey}\r\nsvc-api-key: {key}\r\ncontent-length: 100000\r\n\r\n"
    );
    let (status, took) = raw(&g, &head, None).await;
    assert!(status.contains(" 413 "), "{status}");
    assert!(
        took < Duration::from_secs(5),
        "answered without waiting for the body: {took:?}"
    );
}

async fn a_slow_body_is_a_408_within_the_timeout(db: &TestDatabase) {
    let timeout = Duration::from_millis(800);
    let g = Harness::start_with(db, options(1024 * 1024, timeout)).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let hits = g.upstream.hits();
    let head = format!(
        "POST /proxy HTTP/1.1\r\nhost: x\r\nsvc-proxy-key: {pkey}\r\nsvc-api-key: {key}\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\n"
    );
    let (status, took) = raw(&g, &head, Some((b'x', Duration::from_millis(100), 100))).await;
    assert!(status.contains(" 408 "), "{status}");
    assert!(took >= timeout, "{took:?}");
    assert!(
        took < timeout + Duration::from_secs(3),
        "timed out promptly: {took:?}"
    );
    assert_eq!(g.upstream.hits(), hits, "nothing was forwarded");
}

async fn an_unknown_proxy_key_is_refused_before_the_body_is_read(db: &TestDatabase) {
    let g = Harness::start_with(db, options(1024 * 1024, Duration::from_secs(30))).await;
    let head = "POST /proxy HTTP/1.1\r\nhost: x\r\nsvc-proxy-key: unknownunknownunknownunknown0000\r\ncontent-length: 100\r\n\r\n";
    let (status, took) = raw(&g, head, Some((b'x', Duration::from_secs(1), 100))).await;
    assert!(status.contains(" 401 "), "{status}");
    assert!(took < Duration::from_secs(3), "no body wait: {took:?}");
    // The same through the API helper: the gateway still answers other requests.
    g.call(Method::GET, "/healthz", &[], "").await.expect(200);
}
