//! Two processes on one database: the `api` (which also serves `/proxy`) and a separate
//! `proxy-gateway`. A change made through the api is obeyed by the gateway within 2 s
//! (SUPPLEMENT §8), and immediately by the api itself.

use std::{
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{json, Value};

const GATEWAY: &str = env!("CARGO_BIN_EXE_proxy-gateway");
const MASTER_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// The `api` binary, built by the same workspace.
fn api_binary() -> std::path::PathBuf {
    let mut path = std::path::PathBuf::from(GATEWAY);
    path.set_file_name(if cfg!(windows) { "api.exe" } else { "api" });
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(bin: &Path, dir: &Path, args: &[&str]) -> (Proc, String) {
    let port = free_port();
    let child = Command::new(bin)
        .current_dir(dir)
        .args(args)
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--database-url",
            "sqlite://./shared.db",
            "--allow-private-destinations",
        ])
        .env("TESSERA_MASTER_KEY", MASTER_KEY)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while ureq::get(&format!("{base}/healthz")).call().is_err() {
        assert!(Instant::now() < deadline, "{} did not start", bin.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    (Proc(child), base)
}

fn call(method: &str, url: &str, headers: &[(&str, &str)], body: Option<Value>) -> (u16, Value) {
    let mut req = ureq::request(method, url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let result = match body {
        Some(b) => req.send_json(b),
        None => req.call(),
    };
    match result {
        Ok(r) => (r.status(), r.into_json().unwrap_or(Value::Null)),
        Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap_or(Value::Null)),
        Err(e) => panic!("{url}: {e}"),
    }
}

/// Polls `check` until it holds, returning how long that took; fails after 2 s.
fn within_two_seconds(what: &str, check: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    loop {
        if check() {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{what}: not obeyed within 2 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn changes_through_the_api_reach_another_gateway_process_within_two_seconds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut api, api_base) = spawn(&api_binary(), dir.path(), &["serve"]);
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(api.0.stdout.take().expect("stdout")),
        &mut first,
    )
    .expect("line");
    let admin: Value = serde_json::from_str(&first).expect("bootstrap JSON");
    let admin = admin["api_key"].as_str().expect("key").to_string();
    let (_gateway, gw_base) = spawn(Path::new(GATEWAY), dir.path(), &[]);
    let auth = [("SVC-API-KEY", admin.as_str())];

    // A proxy whose destination is the api's own health endpoint.
    let destination = format!("{api_base}/healthz");
    let (status, proxy) = call(
        "POST",
        &format!("{api_base}/proxies"),
        &auth,
        Some(json!({"name": "health", "destination_url": destination, "require_auth": false})),
    );
    assert_eq!(status, 201, "{proxy}");
    let id = proxy["id"].as_str().expect("id").to_string();
    let key = proxy["key"].as_str().expect("key").to_string();
    let invoke = |base: &str| {
        call(
            "GET",
            &format!("{base}/proxy"),
            &[("SVC-PROXY-KEY", key.as_str())],
            None,
        )
    };
    for base in [&api_base, &gw_base] {
        let (status, body) = invoke(base);
        assert_eq!(
            (status, body),
            (200, json!({"status": "ok"})),
            "anonymous call through {base}"
        );
    }

    // Require authentication: the api obeys at once, the gateway within 2 s.
    let (status, _) = call(
        "PUT",
        &format!("{api_base}/proxies/{id}"),
        &auth,
        Some(json!({"name": "health", "destination_url": destination, "require_auth": true})),
    );
    assert_eq!(status, 200);
    assert_eq!(
        invoke(&api_base).0,
        401,
        "the process that made the change obeys at once"
    );
    let took = within_two_seconds("update", || invoke(&gw_base).0 == 401);
    eprintln!("update obeyed by the other process after {took:?}");

    // An application key: regenerated, then deleted; each change is obeyed by the api at once
    // and by the gateway within 2 s.
    let (status, app) = call(
        "POST",
        &format!("{api_base}/applications"),
        &auth,
        Some(json!({"name": "caller", "type": "private", "permissions": ["token:use"]})),
    );
    assert_eq!(status, 201, "{app}");
    let app_id = app["id"].as_str().expect("id").to_string();
    let old_key = app["key"].as_str().expect("key").to_string();
    let invoke_as = |base: &str, api_key: &str| {
        call(
            "GET",
            &format!("{base}/proxy"),
            &[("SVC-PROXY-KEY", key.as_str()), ("SVC-API-KEY", api_key)],
            None,
        )
        .0
    };
    for base in [&api_base, &gw_base] {
        assert_eq!(invoke_as(base, &old_key), 200, "{base}");
    }
    let (status, regenerated) = call(
        "POST",
        &format!("{api_base}/applications/{app_id}/regenerate"),
        &auth,
        None,
    );
    assert_eq!(status, 200);
    let new_key = regenerated["key"].as_str().expect("key").to_string();
    assert_eq!(invoke_as(&api_base, &old_key), 401, "revoked at once here");
    let took = within_two_seconds("regenerate", || invoke_as(&gw_base, &old_key) == 401);
    eprintln!("key regeneration obeyed by the other process after {took:?}");
    assert_eq!(invoke_as(&gw_base, &new_key), 200);
    let (status, _) = call(
        "DELETE",
        &format!("{api_base}/applications/{app_id}"),
        &auth,
        None,
    );
    assert_eq!(status, 204);
    assert_eq!(invoke_as(&api_base, &new_key), 401, "deleted at once here");
    within_two_seconds("application delete", || {
        invoke_as(&gw_base, &new_key) == 401
    });

    // Delete: the key stops working everywhere.
    let (status, _) = call("DELETE", &format!("{api_base}/proxies/{id}"), &auth, None);
    assert_eq!(status, 204);
    let (status, body) = invoke(&api_base);
    assert_eq!(status, 401);
    assert!(body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .contains("unknown"));
    within_two_seconds("delete", || {
        let (status, body) = invoke(&gw_base);
        status == 401
            && body["proxy_error"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("unknown"))
    });

    // Metrics and readiness on both.
    for base in [&api_base, &gw_base] {
        let text = ureq::get(&format!("{base}/metrics"))
            .call()
            .expect("metrics")
            .into_string()
            .expect("text");
        assert!(text.contains("tessera_http_requests_total"), "{base}");
        assert_eq!(call("GET", &format!("{base}/readyz"), &[], None).0, 200);
    }
}

#[test]
fn the_gateway_stops_gracefully_and_reports_bad_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut gw, _) = spawn(Path::new(GATEWAY), dir.path(), &[]);
    let pid = gw.0.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = gw.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "no exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let out = Command::new(GATEWAY)
        .args(["--destination-timeout", "0"])
        .current_dir(dir.path())
        .env("TESSERA_MASTER_KEY", MASTER_KEY)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--destination-timeout") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

/// Peak resident memory of process `pid`, in KiB (Linux).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Attack finding (issue 11, medium): one 500 KB token referenced ~450 times turned an 18 KB
/// request into a 200 MB forwarded body (RSS 576 MiB). The rendering is bounded before any
/// token is decrypted: 413, and the gateway's memory stays where it was.
#[test]
fn amplification_is_refused_before_memory_grows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut api, api_base) = spawn(&api_binary(), dir.path(), &["serve", "--no-gateway"]);
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(api.0.stdout.take().expect("stdout")),
        &mut first,
    )
    .expect("line");
    let admin: Value = serde_json::from_str(&first).expect("bootstrap JSON");
    let admin = admin["api_key"].as_str().expect("key").to_string();
    let (gateway, gw_base) = spawn(Path::new(GATEWAY), dir.path(), &[]);
    let auth = [("SVC-API-KEY", admin.as_str())];
    let (status, token) = call(
        "POST",
        &format!("{api_base}/tokens"),
        &auth,
        Some(json!({"type": "token", "data": "x".repeat(500 * 1024)})),
    );
    assert_eq!(status, 201, "{token}");
    let id = token["id"].as_str().expect("id").to_string();
    let (status, proxy) = call(
        "POST",
        &format!("{api_base}/proxies"),
        &auth,
        Some(json!({"name": "p", "destination_url": format!("{api_base}/healthz")})),
    );
    assert_eq!(status, 201, "{proxy}");
    let key = proxy["key"].as_str().expect("key").to_string();
    let headers = [
        ("SVC-PROXY-KEY", key.as_str()),
        ("SVC-API-KEY", admin.as_str()),
    ];
    // One reference is fine.
    let one = json!({"a": format!("{{{{{id}}}}}")});
    let (status, body) = call("POST", &format!("{gw_base}/proxy"), &headers, Some(one));
    assert!(
        body.get("proxy_error").is_none(),
        "forwarded: the health endpoint's own {status} came back"
    );
    let before = peak_rss_kib(gateway.0.id());
    let refs = format!("{{{{{id}}}}}").repeat(450);
    assert!(refs.len() >= 18_000);
    let (status, body) = call(
        "POST",
        &format!("{gw_base}/proxy"),
        &headers,
        Some(json!({"a": refs})),
    );
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["proxy_error"]["status"], json!(413));
    let after = peak_rss_kib(gateway.0.id());
    assert!(
        after < before + 32 * 1024,
        "peak RSS grew from {before} KiB to {after} KiB"
    );
}

/// Live children of `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let mut rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter();
        let state = rest.next().unwrap_or_default();
        let ppid: u32 = rest.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        if ppid == pid && state != "Z" {
            found.push(child);
        }
    }
    found
}

/// Both binaries run transforms in sandbox processes by default (Linux): the transform
/// answers through the api and through proxy-gateway, and each one's sandbox is its own
/// executable started with the hidden sandbox argument and an empty environment, while the
/// parent holds the master key in its environment.
#[cfg(target_os = "linux")]
#[test]
fn transforms_run_in_key_less_sandbox_processes_of_both_binaries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut api, api_base) = spawn(&api_binary(), dir.path(), &["serve"]);
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(api.0.stdout.take().expect("stdout")),
        &mut first,
    )
    .expect("line");
    let admin: Value = serde_json::from_str(&first).expect("bootstrap JSON");
    let admin = admin["api_key"].as_str().expect("key").to_string();
    let (gateway, gw_base) = spawn(Path::new(GATEWAY), dir.path(), &[]);
    let (status, proxy) = call(
        "POST",
        &format!("{api_base}/proxies"),
        &[("SVC-API-KEY", admin.as_str())],
        Some(
            json!({"name": "shaped", "destination_url": format!("{api_base}/healthz"), "require_auth": false,
            "response_transform": {"code": "module.exports = async (req) => ({ body: Object.assign(req.args.body, { shaped: true }) });"}}),
        ),
    );
    assert_eq!(status, 201, "{proxy}");
    let key = proxy["key"].as_str().expect("key").to_string();
    for (name, base, pid) in [
        ("api", &api_base, api.0.id()),
        ("proxy-gateway", &gw_base, gateway.0.id()),
    ] {
        let (status, body) = call(
            "GET",
            &format!("{base}/proxy"),
            &[("SVC-PROXY-KEY", key.as_str())],
            None,
        );
        assert_eq!(
            (status, body),
            (200, json!({"status": "ok", "shaped": true})),
            "{name}"
        );
        let parent_env = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
        assert!(
            String::from_utf8_lossy(&parent_env).contains("TESSERA_MASTER_KEY="),
            "{name} itself holds the key"
        );
        let sandboxes: Vec<u32> = children_of(pid)
            .into_iter()
            .filter(|child| {
                std::fs::read(format!("/proc/{child}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("__transform-sandbox"))
            })
            .collect();
        assert!(!sandboxes.is_empty(), "{name} runs a sandbox process");
        for child in sandboxes {
            let environ = std::fs::read(format!("/proc/{child}/environ")).expect("environ");
            assert!(
                environ.is_empty(),
                "{name}'s sandbox {child} has an environment: {}",
                String::from_utf8_lossy(&environ)
            );
        }
    }
}
