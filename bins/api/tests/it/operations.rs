//! What a platform team reads off a running `api` (docs/operations.md, "Logs", "Metrics" and
//! "The configuration file"): its build on `--version`, `/healthz` and `/metrics`; latency per
//! route and the pools' gauges; text logs without colour codes in a file; and one TOML file
//! whose keys fill what flags and the environment leave, checked by `config check`.

use std::path::Path;

use tessera_testkit::process::{call, free_port, Server};

use crate::cli::{bootstrap, command, get, run};

/// `api serve` in `dir` with its log written to `log`, configured by `config` only.
fn serve_with_log(dir: &Path, config: &Path, log: &Path) -> Server {
    let mut c = command(dir);
    c.env("RUST_LOG", "info")
        .args(["--config", config.to_str().expect("path"), "serve"]);
    Server::start_with_stderr(c, std::fs::File::create(log).expect("log file"))
}

#[test]
fn a_served_build_names_itself_times_its_routes_and_logs_plain_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let config = dir.join("api.toml");
    let console = free_port();
    std::fs::write(
        &config,
        format!(
            "database_url = \"sqlite://{}/t.db\"\nconsole_listen = \"127.0.0.1:{console}\"\nsweep_interval = 0\n",
            dir.display()
        ),
    )
    .expect("config");
    let log = dir.join("api.log");
    let mut server = serve_with_log(dir, &config, &log);
    let admin = bootstrap(&mut server);
    let key = admin["api_key"].as_str().expect("key");

    let version = run(dir, &["--version"], &[]);
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let (status, health) = call("GET", &format!("{}/healthz", server.base), &[], None);
    assert_eq!(status, 200);
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    let build = health["build"].as_str().expect("build");
    assert_eq!(
        version,
        format!("api {} ({build})", env!("CARGO_PKG_VERSION")),
        "--version and /healthz name the same build"
    );

    for _ in 0..2 {
        assert_eq!(get(&format!("{}/applications", server.base), key).0, 200);
    }
    let (_, metrics) =
        tessera_testkit::http_client::send("GET", &format!("{}/metrics", server.base), &[], None)
            .map(|r| (r.status, String::from_utf8_lossy(&r.body).into_owned()))
            .expect("metrics");
    for line in [
        format!(
            "tessera_build_info{{commit=\"{build}\",version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        ),
        r#"tessera_api_request_duration_seconds_count{method="GET",route="/applications"} 2"#
            .to_string(),
        r#"tessera_db_pool_connections{pool="main",state="in_use"}"#.to_string(),
        r#"tessera_db_pool_waiting{pool="main"} 0"#.to_string(),
    ] {
        assert!(metrics.contains(&line), "no `{line}` in:\n{metrics}");
    }
    assert!(
        !metrics.contains(key) && !metrics.contains("route=\"/applications?"),
        "routes are patterns, never what was asked"
    );
    assert!(server.terminate().success());
    let log = std::fs::read_to_string(&log).expect("log");
    assert!(log.contains("INFO"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file: {log:?}"
    );
}

#[test]
fn the_configuration_file_fills_what_flags_and_environment_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let config = dir.join("api.toml");
    std::fs::write(
        &config,
        "database_url = \"postgres://tessera:s3cret@db.internal:5432/tessera?sslmode=verify-full\"\n\
         listen = \"127.0.0.1:8099\"\nworkers = 3\ntrusted_proxies = [\"10.0.0.1\", \"10.0.0.2\"]\n",
    )
    .expect("config");
    let path = config.to_str().expect("path");
    let out = run(
        dir,
        &["config", "check", path],
        &[("TESSERA_LISTEN", "127.0.0.1:8100")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    let line = |key: &str| {
        shown
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no `{key}` in:\n{shown}"))
            .to_string()
    };
    assert!(line("listen").contains("8100") && line("listen").ends_with("# environment"));
    assert!(line("workers").contains("= 3") && line("workers").ends_with("# file"));
    assert!(line("trusted_proxies").contains("[\"10.0.0.1\", \"10.0.0.2\"]"));
    assert!(line("database_url").contains("tessera:***@db.internal"));
    assert!(!shown.contains("s3cret"), "a secret was printed: {shown}");
    assert!(line("body_timeout").ends_with("# default"));

    // An unknown key or a bad value is named, and nothing starts.
    for (text, named) in [
        (
            "listen_adress = \"127.0.0.1:1\"\n",
            "unknown key `listen_adress`",
        ),
        ("workers = \"many\"\n", "`workers`"),
        ("cvc_retention = 1e9\n", "`cvc_retention`"),
    ] {
        std::fs::write(&config, text).expect("config");
        let out = run(dir, &["config", "check", path], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(named), "{stderr}");
        let out = run(dir, &["--config", path, "migrate"], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(named), "{stderr}");
        assert!(!dir.join("data").exists(), "nothing was created");
    }

    // The file is read through TESSERA_CONFIG too, and applies to every subcommand.
    let db = dir.join("from-file.db");
    std::fs::write(
        &config,
        format!("database_url = \"sqlite://{}\"\n", db.display()),
    )
    .expect("config");
    let out = run(dir, &["migrate"], &[("TESSERA_CONFIG", path)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(db.exists(), "the file's database was migrated");
}
