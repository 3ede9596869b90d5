//! End-to-end tests of the `api` binary: start-up, bootstrap, the README walk-through over real
//! HTTP, graceful shutdown, and clear failures for bad configuration.

use std::{
    path::Path,
    process::{Command, Output},
};

use serde_json::{json, Value};
use tessera_testkit::process::{call, free_port, Server};

const BIN: &str = env!("CARGO_BIN_EXE_api");

/// A fixed master key (base64 of bytes 0..32) for the tests that restart a server on its data.
pub(crate) const MASTER_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

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

/// A running `api serve`: the server (its API and `/proxy`) and its console's own listener.
pub(crate) struct Api {
    pub(crate) server: Server,
    /// `http://127.0.0.1:<port>` of `--console-listen`.
    pub(crate) console: String,
}

impl std::ops::Deref for Api {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl std::ops::DerefMut for Api {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

/// `api serve` with `extra` flags and `envs`, started in `dir` and answering; its console on a
/// free port of its own.
pub(crate) fn serve(dir: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Api {
    let mut c = command(dir);
    let console = free_port();
    c.arg("serve")
        .args(extra)
        .args(["--console-listen", &format!("127.0.0.1:{console}")])
        .envs(envs.iter().copied());
    Api {
        server: Server::start(c),
        console: format!("http://127.0.0.1:{console}"),
    }
}

/// The bootstrap line a first start prints: the admin key and the ids it belongs to.
pub(crate) fn bootstrap(server: &mut Server) -> Value {
    serde_json::from_str(&server.first_line()).expect("bootstrap JSON on stdout")
}

pub(crate) fn post(url: &str, key: &str, body: Value) -> (u16, Value) {
    call("POST", url, &[("SVC-API-KEY", key)], Some(body))
}

pub(crate) fn get(url: &str, key: &str) -> (u16, Value) {
    call("GET", url, &[("SVC-API-KEY", key)], None)
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
    let mut server = serve(dir.path(), &[], &[]);
    let printed = bootstrap(&mut server);
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
    let mut again = serve(dir.path(), &[], &[]);
    let (status, read) = get(&format!("{}/tokens/{id}", again.base), &app_key);
    assert_eq!((status, &read["data"]), (200, &card));
    assert!(again.interrupt().success(), "Ctrl-C is a clean exit too");
    let rest = again.rest_of_stdout();
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
    let mut server = serve(dir.path(), &[], &[]);
    let printed = bootstrap(&mut server);
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
    let created = succeeds(
        dir.path(),
        &[
            "tenants",
            "create",
            "--name",
            "acme",
            "--database-url",
            "sqlite://./db/t.db",
        ],
        &[],
    );
    let key = created["api_key"].as_str().expect("api_key").to_string();
    assert_eq!(created.as_object().map(|o| o.len()), Some(3));
    let mut server = serve(
        dir.path(),
        &["--database-url", "sqlite://./db/t.db", "--no-bootstrap"],
        &[],
    );
    let (status, _) = get(&format!("{}/applications", server.base), &key);
    assert_eq!(status, 200, "the CLI-created admin key works");
    assert!(server.terminate().success());
    assert!(server.rest_of_stdout().is_empty());
    assert!(!dir.path().join("data/admin-key").exists());
}

/// `api` with `args` and `envs` in `dir`, run to its end.
pub(crate) fn run(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    command(dir)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("run")
}

fn fails_with_one_line(args: &[&str], envs: &[(&str, &str)], expect: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    // `serve` binds its ports first: any free one, so that tests running side by side (or a
    // server on 8080) do not take each other's.
    let mut args = args.to_vec();
    if args.first() == Some(&"serve") {
        args.extend(["--listen", "127.0.0.1:0", "--no-console"]);
    }
    let out = run(dir.path(), &args, envs);
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

/// Timeouts so large that making a `Duration` of them panicked (or adding them to an
/// `Instant`, on every request) stop the process at once with the bounds, from a flag or from
/// its environment variable.
/// `--header-prefix` refuses what would capture standard headers or a `req` field, naming the
/// flag, before anything starts.
#[test]
fn unusable_header_prefixes_fail_clearly() {
    for (value, expect) in [
        ("X", "2 to 16 ASCII letters and digits"),
        ("B-T", "2 to 16 ASCII letters and digits"),
        ("content", "is reserved"),
        ("ARGS", "is reserved"),
    ] {
        fails_with_one_line(&["serve", "--header-prefix", value], &[], expect);
    }
    fails_with_one_line(
        &["serve"],
        &[("TESSERA_HEADER_PREFIX", "sec")],
        "is reserved",
    );
}

#[test]
fn out_of_range_timeouts_fail_clearly() {
    let bound = "must be more than 0 and at most 3600 seconds";
    fails_with_one_line(&["serve", "--destination-timeout", "1e19"], &[], bound);
    fails_with_one_line(&["serve", "--body-timeout", "9.2e18"], &[], bound);
    fails_with_one_line(
        &["serve"],
        &[("TESSERA_TRANSFORM_TIMEOUT", "1.8e19")],
        "must be more than 0 and at most 60 seconds",
    );
    fails_with_one_line(&["serve", "--destination-timeout", "NaN"], &[], bound);
}

/// A port that is taken stops `serve` before it creates anything: no database, no master key,
/// no tenant and no admin key printed; the error names the address and the flag to change.
#[test]
fn a_taken_port_stops_start_up_before_anything_is_created() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let taken = taken.local_addr().expect("address").to_string();
    let free = format!("127.0.0.1:{}", free_port());
    for (args, flag) in [
        (["--listen", &taken, "--console-listen", &free], "--listen"),
        (
            ["--listen", &free, "--console-listen", &taken],
            "--console-listen",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run(dir.path(), &[&["serve"], &args[..]].concat(), &[]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("cannot listen on {taken}")),
            "{stderr}"
        );
        assert!(stderr.contains(flag), "{stderr}");
        assert!(stderr.contains("in use"), "{stderr}");
        assert!(out.stdout.is_empty(), "no admin key printed");
        assert!(!dir.path().join("data").exists(), "nothing created");
    }
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
    succeeds(dir.path(), &["tenants", "create", "--name", "a"], &[]);
    let other = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    refused_for_the_key(
        dir.path(),
        &["tenants", "create", "--name", "b"],
        &[("TESSERA_MASTER_KEY", other)],
    );
    let out = command(dir.path())
        .args(["tenants", "create", "--name", "c"])
        .env("TESSERA_MASTER_KEY", "bad")
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("TESSERA_MASTER_KEY: the master key must be base64 of exactly 32 bytes"));
}

/// `api` with `args` and `envs` in `dir`, which must succeed: its stdout as JSON.
pub(crate) fn succeeds(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Value {
    let out = run(dir, args, envs);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

/// `api` with `args` and `envs` in `dir`, refused because the master key does not open the
/// data.
pub(crate) fn refused_for_the_key(dir: &Path, args: &[&str], envs: &[(&str, &str)]) {
    let out = run(dir, args, envs);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the master key does not open the data"),
        "{stderr}"
    );
}

/// The rotation procedure of docs/operations.md: the new key with the old one as previous,
/// `rotate-master-key`, then the new key alone.
#[test]
fn the_master_key_rotates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let (old, new) = (
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=",
    );
    for name in ["a", "b"] {
        succeeds(
            dir,
            &["tenants", "create", "--name", name],
            &[("TESSERA_MASTER_KEY", old)],
        );
    }
    // The new key alone is refused until the rotation has run.
    refused_for_the_key(dir, &["rotate-master-key"], &[("TESSERA_MASTER_KEY", new)]);
    // The previous key may also come from a file.
    let old_file = dir.join("old.key");
    std::fs::write(&old_file, format!("{old}\n")).expect("write");
    let report = succeeds(
        dir,
        &[
            "rotate-master-key",
            "--previous-master-key-file",
            old_file.to_str().expect("path"),
        ],
        &[("TESSERA_MASTER_KEY", new)],
    );
    assert_eq!(
        report,
        serde_json::json!({"rewrapped": 2, "already_current": 0, "changed_concurrently": 0})
    );
    let report = succeeds(
        dir,
        &["rotate-master-key"],
        &[
            ("TESSERA_MASTER_KEY", new),
            ("TESSERA_PREVIOUS_MASTER_KEY", old),
        ],
    );
    assert_eq!(report["rewrapped"], 0, "idempotent");
    assert_eq!(report["already_current"], 2);
    // Each re-wrap is in its tenant's audit chain (the second run re-wrapped nothing).
    let verified = succeeds(dir, &["audit", "verify"], &[]);
    assert_eq!(verified["events_checked"], 2, "{verified}");
    assert_eq!(verified["chains"].as_array().map(Vec::len), Some(2));
    // Afterwards the new key alone opens the data and the old one does not.
    succeeds(
        dir,
        &["tenants", "create", "--name", "c"],
        &[("TESSERA_MASTER_KEY", new)],
    );
    refused_for_the_key(
        dir,
        &["tenants", "create", "--name", "d"],
        &[("TESSERA_MASTER_KEY", old)],
    );
}

/// `api tenants delete ID` (docs/operations.md, "Deleting a tenant"): the tenant's key goes,
/// then its rows; its admin key no longer works; another tenant is untouched; deleting again
/// says it is not found.
#[test]
fn tenants_delete_destroys_the_keys_then_the_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let envs = [("TESSERA_MASTER_KEY", MASTER_KEY)];
    let gone = succeeds(dir, &["tenants", "create", "--name", "gone"], &envs);
    let kept = succeeds(dir, &["tenants", "create", "--name", "kept"], &envs);
    let id = gone["tenant_id"].as_str().expect("id");
    let report = succeeds(dir, &["tenants", "delete", id], &envs);
    assert_eq!(
        report,
        json!({"tenant_id": id, "keys_destroyed_now": true, "deleted": true})
    );
    let out = run(dir, &["tenants", "delete", id], &envs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("not found"),
        "{stderr}"
    );

    let mut server = serve(dir, &["--no-bootstrap"], &envs);
    let (status, _) = get(
        &format!("{}/applications", server.base),
        gone["api_key"].as_str().expect("key"),
    );
    assert_eq!(status, 401, "the deleted tenant's key is gone");
    let (status, _) = get(
        &format!("{}/applications", server.base),
        kept["api_key"].as_str().expect("key"),
    );
    assert_eq!(status, 200);
    assert!(server.terminate().success());
}
