//! CVC retention with real processes (docs/operations.md, "CVC retention"): two `api serve`
//! processes on one database with `--cvc-retention 1`, both sweeping. A card's CVC is read
//! back within the retention and from neither process after it; the sweeps remove it once
//! (one `token.cvc_removed`, by `system`); after a restart with a longer retention it is still
//! gone, because the row no longer holds it. SQLite, and PostgreSQL when
//! `TESSERA_TEST_DATABASE_URL` is set.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_storage::DatabaseUrl;
use tessera_testkit::db::TestDatabase;

use crate::cli::{bootstrap, get, post, serve, MASTER_KEY};

#[test]
fn a_cards_cvc_goes_once_its_retention_passes_in_every_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    cvc_goes(dir.path(), None);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Some(pg) = rt.block_on(TestDatabase::postgres()) {
        let DatabaseUrl::Postgres { url } = &pg.url else {
            unreachable!("a PostgreSQL database")
        };
        let dir = tempfile::tempdir().expect("tempdir");
        cvc_goes(dir.path(), Some(url));
    }
}

fn cvc_of(base: &str, admin: &str, id: &str) -> Value {
    let (status, token) = get(&format!("{base}/tokens/{id}"), admin);
    assert_eq!(status, 200, "{token}");
    token["data"].get("cvc").cloned().unwrap_or(Value::Null)
}

/// The `token.cvc_removed` events naming `id`.
fn removals(base: &str, admin: &str, id: &str) -> usize {
    let (status, page) = get(
        &format!("{base}/audit-events?size=100&action=token.cvc_removed&resource_id={id}"),
        admin,
    );
    assert_eq!(status, 200, "{page}");
    let events = page["data"].as_array().expect("data");
    assert!(
        events.iter().all(|e| e["actor"] == json!("system")),
        "{page}"
    );
    events.len()
}

fn cvc_goes(dir: &std::path::Path, database: Option<&str>) {
    let mut args = vec!["--cvc-retention", "1", "--sweep-interval", "0.2"];
    if let Some(url) = database {
        args.extend(["--database-url", url]);
    }
    let envs = [("TESSERA_MASTER_KEY", MASTER_KEY)];
    let mut first = serve(dir, &args, &envs);
    let admin = bootstrap(&mut first.server)["api_key"]
        .as_str()
        .expect("api_key")
        .to_string();
    let second = serve(dir, &args, &envs);
    let card = json!({"type": "card", "data": {"number": "4242424242424242",
        "expiration_month": 12, "expiration_year": 2030, "cvc": "123"}});
    let (status, created) = post(&format!("{}/tokens", first.server.base), &admin, card);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_string();
    let created_at = Instant::now();
    let within = cvc_of(&second.server.base, &admin, &id);
    if created_at.elapsed() < Duration::from_millis(900) {
        assert_eq!(within, json!("123"), "kept within the retention");
    }
    std::thread::sleep(Duration::from_millis(1100).saturating_sub(created_at.elapsed()));
    for base in [&first.server.base, &second.server.base] {
        assert_eq!(
            cvc_of(base, &admin, &id),
            Value::Null,
            "gone past the retention"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while removals(&first.server.base, &admin, &id) == 0 {
        assert!(Instant::now() < deadline, "no sweep removed the CVC");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Both processes go on sweeping: the removal stays one.
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(removals(&second.server.base, &admin, &id), 1);
    drop(first);
    drop(second);
    // A restart keeping CVCs for an hour finds none: the row no longer holds it.
    let mut args = vec!["--cvc-retention", "3600"];
    if let Some(url) = database {
        args.extend(["--database-url", url]);
    }
    let restarted = serve(dir, &args, &envs);
    assert_eq!(cvc_of(&restarted.server.base, &admin, &id), Value::Null);
    let (_, token) = get(&format!("{}/tokens/{id}", restarted.server.base), &admin);
    assert_eq!(token["data"]["number"], json!("4242424242424242"));
}
