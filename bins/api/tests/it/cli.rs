//! End-to-end tests of the `api` binary: start-up, bootstrap, the README walk-through over real
//! HTTP, graceful shutdown, and clear failures for bad configuration.

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_api");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

pub(crate) fn command(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env_remove("TESSERA_MASTER_KEY")
        .env_remove("TESSERA_DATABASE_URL")
        .env_remove("TESSERA_DATA_DIR")
        .env_remove("TESSERA_MASTER_KEY_FILE")
        .env_remove("TESSERA_PREVIOUS_MASTER_KEY")
        .env_remove("TESSERA_PREVIOUS_MASTER_KEY_FILE")
        .env("RUST_LOG", "warn");
    c
}

pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Server {
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> Self {
        let port = free_port();
        let mut child = command(dir)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn api");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{base}/healthz")).call().is_err() {
            assert!(Instant::now() < deadline, "server did not start");
            assert!(
                child.try_wait().expect("wait").is_none(),
                "server exited early"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            base,
            stdout,
        }
    }

    pub(crate) fn first_line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read stdout");
        line
    }

    /// SIGTERM, as an orchestrator sends it.
    pub(crate) fn terminate(&mut self) -> std::process::ExitStatus {
        self.signal("-TERM")
    }

    fn signal(&mut self, signal: &str) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

pub(crate) fn post(url: &str, key: &str, body: Value) -> (u16, Value) {
    match ureq::post(url).set("SVC-API-KEY", key).send_json(body) {
        Ok(r) => (r.status(), r.into_json().unwrap_or(Value::Null)),
        Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap_or(Value::Null)),
        Err(e) => panic!("{url}: {e}"),
    }
}

pub(crate) fn get(url: &str, key: &str) -> (u16, Value) {
    match ureq::get(url).set("SVC-API-KEY", key).call() {
        Ok(r) => (r.status(), r.into_json().unwrap_or(Value::Null)),
        Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap_or(Value::Null)),
        Err(e) => panic!("{url}: {e}"),
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn serve_bootstraps_walks_through_the_readme_and_stops_gracefully() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start(dir.path(), &[]);
    let printed: Value =
        serde_json::from_str(&server.first_line()).expect("bootstrap JSON on stdout");
    let admin = printed["api_key"].as_str().expect("api_key").to_string();
    assert!(printed["tenant_id"].is_string() && printed["application_id"].is_string());
    let key_file = dir.path().join("data/admin-key");
    assert_eq!(
        std::fs::read_to_string(&key_file).expect("admin-key"),
        admin
    );
    #[cfg(unix)]
    {
        assert_eq!(mode(&key_file), 0o600);
        assert_eq!(mode(&dir.path().join("data/master.key")), 0o600);
    }

    // The README walk-through.
    let (status, app) = post(
        &format!("{}/applications", server.base),
        &admin,
        json!({
        "name": "backend", "type": "private", "permissions": ["token:create", "token:read", "token:delete"]}),
    );
    assert_eq!(status, 201, "{app}");
    let app_key = app["key"].as_str().expect("key").to_string();
    let card = json!({"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030, "cvc": "123"});
    let (status, token) = post(
        &format!("{}/tokens", server.base),
        &app_key,
        json!({"type": "card", "data": card, "metadata": {"customer": "cus_123"}}),
    );
    assert_eq!(status, 201, "{token}");
    let id = token["id"].as_str().expect("id");
    let (status, read) = get(&format!("{}/tokens/{id}", server.base), &app_key);
    assert_eq!((status, &read["data"]), (200, &card));
    let (status, list) = get(
        &format!("{}/tokens?metadata.customer=cus_123", server.base),
        &app_key,
    );
    assert_eq!(
        (status, &list["pagination"]["total_items"]),
        (200, &json!(1))
    );
    let (status, ready) = get(&format!("{}/readyz", server.base), "");
    assert_eq!((status, ready), (200, json!({"status": "ready"})));

    assert!(server.terminate().success(), "SIGTERM is a clean exit");

    // A restart on the same data: no second bootstrap, same master key, same data.
    let mut again = Server::start(dir.path(), &[]);
    let (status, read) = get(&format!("{}/tokens/{id}", again.base), &app_key);
    assert_eq!((status, &read["data"]), (200, &card));
    assert!(again.signal("-INT").success(), "Ctrl-C is a clean exit too");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut again.stdout, &mut rest).expect("stdout");
    assert!(
        rest.is_empty(),
        "nothing printed on the second start: {rest}"
    );
}

#[test]
fn a_stale_admin_key_file_does_not_lose_the_new_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/admin-key"), "key_stale").expect("stale file");
    let mut server = Server::start(dir.path(), &[]);
    let printed: Value =
        serde_json::from_str(&server.first_line()).expect("bootstrap JSON on stdout");
    let admin = printed["api_key"].as_str().expect("api_key");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("data/admin-key")).expect("file"),
        admin
    );
    #[cfg(unix)]
    assert_eq!(mode(&dir.path().join("data/admin-key")), 0o600);
    #[cfg(unix)]
    assert_eq!(
        mode(&dir.path().join("data/tessera.db")),
        0o600,
        "the database file is owner-only"
    );
    let (status, _) = get(&format!("{}/applications", server.base), admin);
    assert_eq!(status, 200);
    assert!(server.terminate().success());
}

#[test]
fn no_bootstrap_and_tenants_create() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = command(dir.path())
        .args([
            "tenants",
            "create",
            "--name",
            "acme",
            "--database-url",
            "sqlite://./db/t.db",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let key = created["api_key"].as_str().expect("api_key").to_string();
    assert_eq!(created.as_object().map(|o| o.len()), Some(3));
    let mut server = Server::start(
        dir.path(),
        &["--database-url", "sqlite://./db/t.db", "--no-bootstrap"],
    );
    let (status, _) = get(&format!("{}/applications", server.base), &key);
    assert_eq!(status, 200, "the CLI-created admin key works");
    assert!(server.terminate().success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut server.stdout, &mut rest).expect("stdout");
    assert!(rest.is_empty());
    assert!(!dir.path().join("data/admin-key").exists());
}

fn fails_with_one_line(args: &[&str], envs: &[(&str, &str)], expect: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = command(dir.path())
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(expect), "expected `{expect}` in: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
}

#[test]
fn bad_configuration_fails_clearly() {
    fails_with_one_line(&["--listen", "nowhere"], &[], "invalid value 'nowhere'");
    fails_with_one_line(&["--no-such-flag"], &[], "unexpected argument");
    fails_with_one_line(
        &["serve", "--rate-limit=-5"],
        &[],
        "--rate-limit must be a positive number",
    );
    fails_with_one_line(
        &["serve", "--database-url", "mysql://x"],
        &[],
        "unsupported database URL",
    );
    fails_with_one_line(
        &[
            "serve",
            "--database-url",
            "postgres://postgres@127.0.0.1:1/none",
        ],
        &[],
        "no master key: on PostgreSQL set TESSERA_MASTER_KEY",
    );
    fails_with_one_line(
        &[
            "serve",
            "--database-url",
            "postgres://postgres@127.0.0.1:1/none",
        ],
        &[(
            "TESSERA_MASTER_KEY",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        )],
        "error: cannot open the database",
    );
}

#[test]
fn migrate_applies_and_is_idempotent() {
    let dir = tempfile::tempdir().expect("tempdir");
    for _ in 0..2 {
        let out = command(dir.path()).arg("migrate").output().expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "migrations applied\n");
    }
}

#[test]
fn a_wrong_master_key_refuses_to_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = command(dir.path())
        .args(["tenants", "create", "--name", "a"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let other = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let out = command(dir.path())
        .args(["tenants", "create", "--name", "b"])
        .env("TESSERA_MASTER_KEY", other)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the master key does not open the data"),
        "{stderr}"
    );
    let out = command(dir.path())
        .args(["tenants", "create", "--name", "c"])
        .env("TESSERA_MASTER_KEY", "bad")
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("TESSERA_MASTER_KEY: the master key must be base64 of exactly 32 bytes"));
}

/// The rotation procedure of docs/operations.md: the new key with the old one as previous,
/// `rotate-master-key`, then the new key alone.
#[test]
fn the_master_key_rotates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (old, new) = (
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=",
    );
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        command(dir.path())
            .args(args)
            .envs(envs.iter().copied())
            .output()
            .expect("run")
    };
    for name in ["a", "b"] {
        let out = run(
            &["tenants", "create", "--name", name],
            &[("TESSERA_MASTER_KEY", old)],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The new key alone is refused until the rotation has run.
    let out = run(&["rotate-master-key"], &[("TESSERA_MASTER_KEY", new)]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the master key does not open the data"));
    // The previous key may also come from a file.
    let old_file = dir.path().join("old.key");
    std::fs::write(&old_file, format!("{old}\n")).expect("write");
    let out = run(
        &[
            "rotate-master-key",
            "--previous-master-key-file",
            old_file.to_str().expect("path"),
        ],
        &[("TESSERA_MASTER_KEY", new)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        report,
        serde_json::json!({"rewrapped": 2, "already_current": 0, "changed_concurrently": 0})
    );
    let out = run(
        &["rotate-master-key"],
        &[
            ("TESSERA_MASTER_KEY", new),
            ("TESSERA_PREVIOUS_MASTER_KEY", old),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["rewrapped"], 0, "idempotent");
    assert_eq!(report["already_current"], 2);
    // Each re-wrap is in its tenant's audit chain (the second run re-wrapped nothing).
    let out = run(&["audit", "verify"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verified: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(verified["events_checked"], 2, "{verified}");
    assert_eq!(verified["chains"].as_array().map(Vec::len), Some(2));
    // Afterwards the new key alone opens the data and the old one does not.
    let out = run(
        &["tenants", "create", "--name", "c"],
        &[("TESSERA_MASTER_KEY", new)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(
        &["tenants", "create", "--name", "d"],
        &[("TESSERA_MASTER_KEY", old)],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the master key does not open the data"));
}
