//! The upgrade contract and the key trap, through the binary (docs/operations.md,
//! "Upgrading" and "Backups"): `migrate --status` lists what is applied and pending, an older
//! binary refuses a newer schema, `--no-migrate` refuses pending migrations, and a database
//! restored without its key is refused without a new key written beside it.

use std::path::Path;

use crate::cli::run;

/// A migration no release of this binary knows.
const FUTURE: &str = "29991231000001";

fn sqlite_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("data/tessera.db").display())
}

/// Runs raw SQL on the SQLite database in `dir`, as a later release (or an operator) would.
fn execute(dir: &Path, sql: &str) {
    let url: tessera_storage::DatabaseUrl = sqlite_url(dir).parse().expect("url");
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let db = tessera_storage::Database::connect(
                &url,
                tessera_storage::PoolOptions::default_for(&url),
            )
            .await
            .expect("open");
            db.batch_execute(sql).await.expect("sql");
        });
}

/// `api` in `dir` with `args`, which must fail with one line holding `expect`.
fn refused(dir: &Path, args: &[&str], expect: &str) {
    let out = run(dir, args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} started: {stderr}");
    assert!(stderr.contains(expect), "expected `{expect}` in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn stdout(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args, &[]);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn migrate_status_lists_every_migration_and_an_older_binary_refuses_a_newer_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let listed = stdout(dir, &["migrate", "--status"]);
    assert!(listed.starts_with("version"), "{listed}");
    assert!(
        listed.contains("20261121000001  init") && listed.contains("pending"),
        "{listed}"
    );
    assert!(!listed.contains("applied"), "nothing applied yet: {listed}");
    // Under --no-migrate a process refuses pending migrations and changes nothing.
    refused(
        dir,
        &["tenants", "create", "--name", "a", "--no-migrate"],
        "run `api migrate` first",
    );
    assert_eq!(stdout(dir, &["migrate"]).trim(), "migrations applied");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(dir, &["migrate", "--status", "--json"])).expect("JSON");
    let entries = json.as_array().expect("a list");
    assert!(entries.iter().all(|e| e["state"] == "applied"), "{json}");
    assert_eq!(entries[0]["name"], "init");
    stdout(dir, &["tenants", "create", "--name", "a", "--no-migrate"]);

    // A later release applied a migration this binary does not know.
    execute(
        dir,
        &format!("INSERT INTO __diesel_schema_migrations (version) VALUES ('{FUTURE}')"),
    );
    let listed = stdout(dir, &["migrate", "--status"]);
    assert!(
        listed.contains(FUTURE) && listed.contains("applied by a newer release"),
        "{listed}"
    );
    for args in [
        &["serve", "--listen", "127.0.0.1:0", "--no-console"][..],
        &["migrate"],
        &["tenants", "create", "--name", "b"],
    ] {
        refused(dir, args, "the database schema is newer than this binary");
    }
}

#[test]
fn a_database_restored_without_its_key_is_refused_and_no_key_is_written() {
    let first = tempfile::tempdir().expect("tempdir");
    stdout(first.path(), &["tenants", "create", "--name", "a"]);
    assert!(first.path().join("data/master.key").exists());
    // The restore: the database files without the key file beside them.
    let second = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(second.path().join("data")).expect("mkdir");
    for file in ["tessera.db", "tessera.db-wal", "tessera.db-shm"] {
        let from = first.path().join("data").join(file);
        if from.exists() {
            std::fs::copy(from, second.path().join("data").join(file)).expect("copy");
        }
    }
    for args in [
        &["serve", "--listen", "127.0.0.1:0", "--no-console"][..],
        &["tenants", "create", "--name", "b"],
    ] {
        refused(
            second.path(),
            args,
            "this database holds data wrapped by a master key, but no key was found",
        );
        assert!(
            !second.path().join("data/master.key").exists(),
            "a new key was written beside a restored database"
        );
    }
    // With its key back, it opens.
    std::fs::copy(
        first.path().join("data/master.key"),
        second.path().join("data/master.key"),
    )
    .expect("copy the key");
    stdout(second.path(), &["tenants", "create", "--name", "b"]);
}
