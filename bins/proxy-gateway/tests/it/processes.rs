//! Two processes on one database: the `api` (which also serves `/proxy`) and a separate
//! `proxy-gateway`. A change made through the api is obeyed by the gateway within 2 s
//! (docs/operations.md, "Configuration"), and immediately by the api itself.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use tempfile::TempDir;
use tessera_testkit::{
    process::{call, Server},
    MASTER_KEY,
};

const GATEWAY: &str = env!("CARGO_BIN_EXE_proxy-gateway");

/// The `api` binary, built by the same workspace.
fn api_binary() -> PathBuf {
    let mut path = PathBuf::from(GATEWAY);
    path.set_file_name(if cfg!(windows) { "api.exe" } else { "api" });
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

/// `bin` with `args`, started in `dir` on the shared SQLite database.
fn spawn(bin: &Path, dir: &Path, args: &[&str]) -> Server {
    let mut command = Command::new(bin);
    command
        .current_dir(dir)
        .args(args)
        .args([
            "--database-url",
            "sqlite://./shared.db",
            "--allow-private-destinations",
        ])
        .env("TESSERA_MASTER_KEY", MASTER_KEY)
        .env("RUST_LOG", "warn");
    Server::start(command)
}

/// An `api` started with `api_args` and a `proxy-gateway`, on one database, and the admin key
/// the api bootstrapped.
struct Pair {
    api: Server,
    gateway: Server,
    admin: String,
    _dir: TempDir,
}

impl Pair {
    fn start(api_args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        // The console listens on a port of its own: these tests need none.
        let api_args = [api_args, &["--no-console"]].concat();
        let mut api = spawn(&api_binary(), dir.path(), &api_args);
        let admin: Value = serde_json::from_str(&api.first_line()).expect("bootstrap JSON");
        let admin = admin["api_key"].as_str().expect("key").to_string();
        let gateway = spawn(Path::new(GATEWAY), dir.path(), &[]);
        Self {
            api,
            gateway,
            admin,
            _dir: dir,
        }
    }

    /// Both bases, the api's first.
    fn bases(&self) -> [&str; 2] {
        [&self.api.base, &self.gateway.base]
    }

    /// `method path` on the api's management API as the admin.
    fn manage(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.api.base);
        call(method, &url, &[("SVC-API-KEY", self.admin.as_str())], body)
    }

    /// The api's own health endpoint, as a proxy destination.
    fn health(&self) -> String {
        format!("{}/healthz", self.api.base)
    }

    /// A proxy "health" to the api's health endpoint, requiring authentication or not: its id
    /// and key.
    fn health_proxy(&self, require_auth: bool) -> (String, String) {
        self.create_proxy(
            json!({"name": "health", "destination_url": self.health(), "require_auth": require_auth}),
        )
    }

    /// Creates the proxy `body` describes: its id and key.
    fn create_proxy(&self, body: Value) -> (String, String) {
        let (status, proxy) = self.manage("POST", "/proxies", Some(body));
        assert_eq!(status, 201, "{proxy}");
        let id = proxy["id"].as_str().expect("id").to_string();
        (id, proxy["key"].as_str().expect("key").to_string())
    }
}

/// `GET {base}/proxy` with the proxy key and, if any, an application key.
fn invoke(base: &str, proxy_key: &str, api_key: Option<&str>) -> (u16, Value) {
    let mut headers = vec![("SVC-PROXY-KEY", proxy_key)];
    headers.extend(api_key.map(|key| ("SVC-API-KEY", key)));
    call("GET", &format!("{base}/proxy"), &headers, None)
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

/// A proxy made to require authentication: the api obeys at once, the gateway within 2 s.
#[test]
fn a_proxy_update_is_obeyed_here_at_once_and_by_the_other_process_within_two_seconds() {
    let pair = Pair::start(&["serve"]);
    // A proxy whose destination is the api's own health endpoint.
    let destination = pair.health();
    let (id, key) = pair.create_proxy(
        json!({"name": "health", "destination_url": destination, "require_auth": false}),
    );
    for base in pair.bases() {
        let (status, body) = invoke(base, &key, None);
        assert_eq!(
            (status, body["status"].clone()),
            (200, json!("ok")),
            "anonymous call through {base}"
        );
    }
    let (status, _) = pair.manage(
        "PUT",
        &format!("/proxies/{id}"),
        Some(json!({"name": "health", "destination_url": destination, "require_auth": true})),
    );
    assert_eq!(status, 200);
    assert_eq!(
        invoke(&pair.api.base, &key, None).0,
        401,
        "the process that made the change obeys at once"
    );
    let took = within_two_seconds("update", || invoke(&pair.gateway.base, &key, None).0 == 401);
    eprintln!("update obeyed by the other process after {took:?}");
}

/// An application key, regenerated, then deleted: each change is obeyed by the api at once and
/// by the gateway within 2 s.
#[test]
fn an_application_key_change_is_obeyed_here_at_once_and_by_the_other_process_within_two_seconds() {
    let pair = Pair::start(&["serve"]);
    let (_, key) = pair.health_proxy(true);
    let (status, app) = pair.manage(
        "POST",
        "/applications",
        Some(json!({"name": "caller", "type": "private", "permissions": ["token:use"]})),
    );
    assert_eq!(status, 201, "{app}");
    let app_id = app["id"].as_str().expect("id").to_string();
    let old_key = app["key"].as_str().expect("key").to_string();
    let invoke_as = |base: &str, api_key: &str| invoke(base, &key, Some(api_key)).0;
    for base in pair.bases() {
        assert_eq!(invoke_as(base, &old_key), 200, "{base}");
    }
    let (api, gateway) = (&pair.api.base, &pair.gateway.base);
    let (status, regenerated) =
        pair.manage("POST", &format!("/applications/{app_id}/regenerate"), None);
    assert_eq!(status, 200);
    let new_key = regenerated["key"].as_str().expect("key").to_string();
    assert_eq!(invoke_as(api, &old_key), 401, "revoked at once here");
    let took = within_two_seconds("regenerate", || invoke_as(gateway, &old_key) == 401);
    eprintln!("key regeneration obeyed by the other process after {took:?}");
    assert_eq!(invoke_as(gateway, &new_key), 200);
    let (status, _) = pair.manage("DELETE", &format!("/applications/{app_id}"), None);
    assert_eq!(status, 204);
    assert_eq!(invoke_as(api, &new_key), 401, "deleted at once here");
    within_two_seconds("application delete", || invoke_as(gateway, &new_key) == 401);
}

/// A deleted proxy's key stops working everywhere: unknown here at once, there within 2 s.
#[test]
fn a_deleted_proxy_is_unknown_everywhere() {
    let pair = Pair::start(&["serve"]);
    let (id, key) = pair.health_proxy(false);
    for base in pair.bases() {
        assert_eq!(invoke(base, &key, None).0, 200, "known to {base} first");
    }
    let (status, _) = pair.manage("DELETE", &format!("/proxies/{id}"), None);
    assert_eq!(status, 204);
    let (status, body) = invoke(&pair.api.base, &key, None);
    assert_eq!(status, 401);
    assert!(body["proxy_error"]["detail"]
        .as_str()
        .expect("detail")
        .contains("unknown"));
    within_two_seconds("delete", || {
        let (status, body) = invoke(&pair.gateway.base, &key, None);
        status == 401
            && body["proxy_error"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("unknown"))
    });
}

/// Both processes, having served proxied requests, expose their metrics and readiness.
#[test]
fn both_processes_serve_metrics_and_readiness() {
    let pair = Pair::start(&["serve"]);
    let (_, key) = pair.health_proxy(false);
    for base in pair.bases() {
        assert_eq!(invoke(base, &key, None).0, 200, "{base}");
        let text = tessera_testkit::http_client::get(&format!("{base}/metrics"), &[]).text();
        assert!(text.contains("tessera_http_requests_total"), "{base}");
        assert_eq!(call("GET", &format!("{base}/readyz"), &[], None).0, 200);
    }
}

#[test]
fn the_gateway_stops_gracefully_and_reports_bad_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut gateway = spawn(Path::new(GATEWAY), dir.path(), &[]);
    assert!(gateway.terminate().success(), "a clean exit on SIGTERM");
    // 1e19 seconds panicked at start-up when it was made a `Duration`.
    for value in ["0", "1e19"] {
        let out = Command::new(GATEWAY)
            .args(["--destination-timeout", value])
            .current_dir(dir.path())
            .env("TESSERA_MASTER_KEY", MASTER_KEY)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "invalid value '{value}' for '--destination-timeout"
            )) && stderr.contains("must be more than 0 and at most 3600 seconds")
                && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
    let out = Command::new(GATEWAY)
        .args(["--header-prefix", "PROXY"])
        .current_dir(dir.path())
        .env("TESSERA_MASTER_KEY", MASTER_KEY)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--header-prefix") && stderr.contains("is reserved"),
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

/// One 500 KB token referenced ~450 times turned an 18 KB
/// request into a 200 MB forwarded body (RSS 576 MiB). The rendering is bounded before any
/// token is decrypted: 413, and the gateway's memory stays where it was.
#[test]
fn amplification_is_refused_before_memory_grows() {
    let pair = Pair::start(&["serve", "--no-gateway"]);
    let (status, token) = pair.manage(
        "POST",
        "/tokens",
        Some(json!({"type": "token", "data": "x".repeat(500 * 1024)})),
    );
    assert_eq!(status, 201, "{token}");
    let id = token["id"].as_str().expect("id").to_string();
    let (_, key) = pair.create_proxy(json!({"name": "p", "destination_url": pair.health()}));
    let headers = [
        ("SVC-PROXY-KEY", key.as_str()),
        ("SVC-API-KEY", pair.admin.as_str()),
    ];
    let gw_base = &pair.gateway.base;
    // One reference is fine.
    let one = json!({"a": format!("{{{{{id}}}}}")});
    let (status, body) = call("POST", &format!("{gw_base}/proxy"), &headers, Some(one));
    assert!(
        body.get("proxy_error").is_none(),
        "forwarded: the health endpoint's own {status} came back"
    );
    let before = peak_rss_kib(pair.gateway.pid());
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
    let after = peak_rss_kib(pair.gateway.pid());
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
    let pair = Pair::start(&["serve"]);
    let (_, key) = pair.create_proxy(
        json!({"name": "shaped", "destination_url": pair.health(), "require_auth": false,
        "response_transform": {"code": "module.exports = async (req) => ({ body: Object.assign(req.args.body, { shaped: true }) });"}}),
    );
    for (name, server) in [("api", &pair.api), ("proxy-gateway", &pair.gateway)] {
        let (base, pid) = (&server.base, server.pid());
        let (status, body) = invoke(base, &key, None);
        assert_eq!(
            (status, body["status"].clone(), body["shaped"].clone()),
            (200, json!("ok"), json!(true)),
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
