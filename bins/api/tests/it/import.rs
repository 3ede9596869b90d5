//! `api import` end to end (docs/migrating.md, "Importing tokens"): an export of 10,000 rows,
//! 1% of them bad, imported against a running `api serve`, the import killed with SIGKILL
//! halfway and run again: every good row is stored once, every bad row is reported with its
//! line, id and reason, and what is not kept is said. On SQLite and (when
//! `TESSERA_TEST_DATABASE_URL` is set) PostgreSQL.

use std::{io::Write, path::Path, process::Stdio, time::Duration};

use serde_json::{json, Value};
use tessera_storage::DatabaseUrl;
use tessera_testkit::{
    db::TestDatabase,
    upstream::{TestPki, Upstream},
};

use crate::cli::{bootstrap, command, get, serve, MASTER_KEY};

const ROWS: usize = 10_000;
#[test]
fn an_import_killed_halfway_resumes_and_reports_every_bad_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    killed_and_resumed(dir.path(), None);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Some(pg) = rt.block_on(TestDatabase::postgres()) {
        let DatabaseUrl::Postgres { url } = &pg.url else {
            unreachable!("a PostgreSQL database")
        };
        let dir = tempfile::tempdir().expect("tempdir");
        killed_and_resumed(dir.path(), Some(url));
    }
}

/// Over HTTPS, a server whose certificate a private CA signed is refused at once (no retries)
/// unless `--ca-file` names the CA; and a server that answers what `/tokenize` never answers
/// (here an echo server's 200) stops the import: nothing is counted as stored.
#[test]
fn an_import_trusts_a_private_ca_only_when_told_and_only_tokenize_stores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pki = TestPki::new();
    let upstream = rt.block_on(Upstream::start(Some(&pki)));
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).expect("ca");
    let export = dir.path().join("export.jsonl");
    std::fs::write(&export, format!("{}\n{}\n", row(1), row(2))).expect("export");
    let url = format!("https://localhost:{}/api", upstream.addr.port());
    let run = |extra: &[&str]| {
        command(dir.path())
            .args(["import", export.to_str().expect("path"), "--url", &url])
            .args(extra)
            .env("TESSERA_API_KEY", "key_test")
            .output()
            .expect("import")
    };
    let refused = run(&[]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--ca-file"), "{stderr}");
    assert_eq!(
        upstream.hits(),
        0,
        "no request crossed an untrusted connection"
    );
    let trusted = run(&["--ca-file", ca.to_str().expect("path")]);
    assert_eq!(trusted.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&trusted.stderr);
    assert!(stderr.contains("is --url a Tessera API"), "{stderr}");
    assert_eq!(upstream.hits(), 1, "one batch, not retried");
    let sent: Value = serde_json::from_str(&upstream.last_body()).expect("a JSON batch");
    assert_eq!(sent[0]["id"], json!("imp_00001"));
    assert!(sent[0].get("created_at").is_none(), "not kept, not sent");
}

/// Row `i` of the export: every hundredth is bad, in one of four ways.
fn row(i: usize) -> Value {
    let id = format!("imp_{i:05}");
    match (i % 100 == 7, i % 400) {
        (true, 7) => json!({"id": id, "type": "card", "data": {"number": "4242424242424241"}}),
        (true, 107) => json!({"id": format!("bad/{i}"), "type": "token", "data": "x"}),
        (true, 207) => json!({"id": id, "type": "gold", "data": "x"}),
        (true, _) => json!({"id": id, "type": "social_security_number", "data": "12-34"}),
        (false, _) => json!({"id": id, "type": "token", "data": format!("value {i}"),
            "metadata": {"row": i.to_string()}, "created_at": "2024-01-01T00:00:00+00:00",
            "fingerprint": "AKCUXS83DokKo4pDRKSAy4d42t9i8dcP1X2jijwEBCQH",
            "tenant_id": "77cb0024-123e-41a8-8ff8-a3d5a0fa8a08"}),
    }
}

fn write_export(path: &Path) {
    let mut file = std::fs::File::create(path).expect("export");
    for i in 0..ROWS {
        writeln!(file, "{}", row(i)).expect("line");
    }
}

fn stored(base: &str, admin: &str) -> u64 {
    let (status, page) = get(&format!("{base}/tokens?size=1"), admin);
    assert_eq!(status, 200);
    page["pagination"]["total_items"].as_u64().expect("total")
}

fn killed_and_resumed(dir: &Path, database: Option<&str>) {
    let mut args = vec![];
    if let Some(url) = database {
        args.extend(["--database-url", url]);
    }
    let mut server = serve(dir, &args, &[("TESSERA_MASTER_KEY", MASTER_KEY)]);
    let admin = bootstrap(&mut server)["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let base = server.base.clone();
    let export = dir.join("export.jsonl");
    write_export(&export);
    let import = |concurrency: &str| {
        let mut c = command(dir);
        c.args(["import", export.to_str().expect("path"), "--url", &base])
            .args(["--concurrency", concurrency])
            .env("TESSERA_API_KEY", &admin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    // The first run, killed once about half the rows are stored.
    let mut first = import("2").spawn().expect("import");
    while stored(&base, &admin) < (ROWS / 2) as u64 {
        assert!(
            first.try_wait().expect("wait").is_none(),
            "the import ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");
    let partly = stored(&base, &admin);
    assert!(
        partly < ROWS as u64 - 100,
        "killed halfway: {partly} stored"
    );
    // The rerun: the stored rows are skipped by id, the rest stored, the bad ones reported.
    let rerun = import("8").output().expect("rerun");
    assert_eq!(rerun.status.code(), Some(1), "rows were refused");
    let summary: Value = serde_json::from_slice(&rerun.stdout).expect("summary");
    let good = (ROWS - ROWS / 100) as u64;
    assert_eq!(stored(&base, &admin), good, "every good row stored once");
    assert_eq!(summary["rows"], json!(ROWS));
    assert_eq!(summary["refused"], json!(ROWS / 100));
    assert_eq!(
        summary["stored"].as_u64().expect("stored") + summary["skipped"].as_u64().expect("skipped"),
        good
    );
    assert!(summary["skipped"].as_u64().expect("skipped") >= partly);
    each_refusal_and_dropped_field_is_reported(&summary);
    // Read back: data and metadata as exported.
    let (status, token) = get(&format!("{base}/tokens/imp_04242"), &admin);
    assert_eq!(status, 200);
    assert_eq!(token["data"], json!("value 4242"));
    assert_eq!(token["metadata"], json!({"row": "4242"}));
    assert!(server.terminate().success());
}

/// The rerun's summary names each bad row by its line, with a reason naming what is wrong,
/// and the export's fields it did not keep.
fn each_refusal_and_dropped_field_is_reported(summary: &Value) {
    let refusals = summary["refusals"].as_array().expect("refusals");
    let lines: Vec<u64> = refusals
        .iter()
        .map(|r| r["line"].as_u64().expect("line"))
        .collect();
    let expected: Vec<u64> = (0..ROWS)
        .filter(|i| i % 100 == 7)
        .map(|i| i as u64 + 1)
        .collect();
    assert_eq!(lines, expected, "each bad row, by its line");
    let reason = |line: u64| {
        refusals
            .iter()
            .find(|r| r["line"] == json!(line))
            .expect("refusal")["reason"]
            .as_str()
            .expect("reason")
            .to_string()
    };
    assert!(reason(8).contains("data.number"), "{}", reason(8));
    assert!(reason(108).contains("id"), "{}", reason(108));
    assert!(reason(208).contains("type"), "{}", reason(208));
    assert!(reason(308).starts_with("data"), "{}", reason(308));
    assert_eq!(refusals[0]["id"], json!("imp_00007"));
    let dropped: Vec<&str> = summary["not_kept"]
        .as_array()
        .expect("not kept")
        .iter()
        .map(|d| d["field"].as_str().expect("field"))
        .collect();
    assert_eq!(dropped, vec!["created_at", "fingerprint", "tenant_id"]);
}
