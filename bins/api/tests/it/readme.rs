//! The README's commands, run as written: the quick start and the curl walk-through, from a
//! fresh directory, against the `api` binary this build made (`crate::cli::command`). Only the ports differ (free ones
//! in place of 8080, 8082 and 8083, so that tests can run beside a server) and `cargo run
//! --release --bin api` stands for the binary; every other character of each command is the
//! README's. A command that fails, or an answer that no longer shows what the README says it
//! shows, fails the test, so the README stays true.

use std::{
    collections::BTreeSet,
    path::Path,
    process::{Command, Stdio},
};

use tessera_testkit::process::{free_port, Server};

/// What starts the server in the README.
const RUN: &str = "cargo run --release --bin api";

/// The fenced `bash` blocks of the README's "Quick start" and "A first token, with curl", in
/// order.
fn walk_through() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let start = readme.find("## Quick start").expect("a quick start");
    let end = readme
        .find("## Configuration")
        .expect("a configuration section");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme[start..end].lines() {
        match (&mut current, line.trim_start()) {
            (None, "```bash") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// Whether the tools the walk-through uses are here; under `CI=true` they must be.
fn tools_present() -> bool {
    let present = ["curl", "python3"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !present {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "CI=true but curl or python3 is missing: the README's commands must run"
        );
        eprintln!("skipped: the README's walk-through needs curl and python3");
    }
    present
}

/// The README's ports, and free ones to use in their place.
struct Ports(Vec<(String, String)>);

impl Ports {
    fn new() -> Self {
        Self(
            ["8080", "8082", "8083"]
                .iter()
                .map(|p| {
                    (
                        format!("127.0.0.1:{p}"),
                        format!("127.0.0.1:{}", free_port()),
                    )
                })
                .collect(),
        )
    }

    fn apply(&self, text: &str) -> String {
        self.0
            .iter()
            .fold(text.to_string(), |t, (from, to)| t.replace(from, to))
    }

    fn console(&self) -> &str {
        &self.0[1].1
    }
}

/// The README's server command, started in `dir` as the binary (its flags kept); the README's
/// API port now stands for the one it listens on.
fn start(dir: &Path, line: &str, ports: &mut Ports) -> Server {
    let flags = line
        .trim()
        .strip_prefix(RUN)
        .expect("a server command")
        .trim_start()
        .trim_start_matches("--");
    let mut c = crate::cli::command(dir);
    c.args(ports.apply(flags).split_whitespace())
        .env("TESSERA_CONSOLE_LISTEN", ports.console());
    // `Server::start` adds `--listen` with a free port of its own.
    let server = Server::start(c);
    ports.0[0].1 = server.base.trim_start_matches("http://").to_string();
    server
}

/// The variables `block` assigns at the start of a line (`ADMIN_KEY=$(…)`).
fn assigned(block: &str) -> BTreeSet<String> {
    block
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(name, _)| name.trim())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// Runs `block` with bash in `dir`, strict (`-euo pipefail`), after the variables earlier
/// blocks set; returns what it printed and adds what it set to `vars`.
fn run(dir: &Path, block: &str, vars: &mut String) -> String {
    let names: Vec<String> = assigned(block).into_iter().collect();
    let keep = if names.is_empty() {
        String::new()
    } else {
        format!("\ndeclare -p {} > .readme-vars", names.join(" "))
    };
    let script = format!("set -euo pipefail\n{vars}\n{block}{keep}");
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "a README command failed:\n{block}\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !names.is_empty() {
        vars.push_str(&std::fs::read_to_string(dir.join(".readme-vars")).expect("variables"));
    }
    stdout
}

#[test]
fn the_readme_walk_through_runs_as_written() {
    if !tools_present() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ports = Ports::new();
    let (mut server, mut vars, mut printed) = (None::<Server>, String::new(), Vec::new());
    for block in walk_through() {
        let first = block.lines().next().unwrap_or_default().trim();
        if first.starts_with(RUN) {
            if let Some(mut running) = server.take() {
                assert!(running.interrupt().success(), "Ctrl-C stops it cleanly");
            }
            server = Some(start(dir.path(), first, &mut ports));
        } else if block.contains("cargo test") {
            continue; // the test command: this is it
        } else {
            printed.push(run(dir.path(), &ports.apply(&block), &mut vars));
        }
    }
    let mut server = server.expect("the README starts a server");
    let echoed = printed.last().expect("the walk-through's last answer");
    let echoed: serde_json::Value = serde_json::from_str(echoed.trim()).expect("the echo's JSON");
    assert_eq!(echoed["path"], "/v1/charges");
    assert_eq!(
        echoed["body"],
        serde_json::json!({"amount": 1000, "card": "4242424242424242", "merchant": "m_123"}),
        "the card swapped in and the transform's change"
    );
    assert!(printed
        .iter()
        .any(|p| p.contains("svc-proxy-destination-status: 200")));
    assert!(server.terminate().success());
}
