//! Bulk imports killed mid-way (docs/operations.md "Durability"): `api serve` is killed with
//! SIGKILL while four callers import tokens in bulk; after a restart every token whose call was
//! answered 201 is there, with its data, on SQLite and (when `TESSERA_TEST_DATABASE_URL` is
//! set) PostgreSQL.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use serde_json::{json, Value};
use tessera_storage::DatabaseUrl;
use tessera_testkit::db::TestDatabase;

use crate::cli::{bootstrap, get, post, serve, MASTER_KEY};

#[test]
fn acknowledged_bulk_imports_survive_a_kill() {
    let dir = tempfile::tempdir().expect("tempdir");
    acknowledged_tokens_survive(dir.path(), None);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Some(pg) = rt.block_on(TestDatabase::postgres()) {
        let DatabaseUrl::Postgres { url } = &pg.url else {
            unreachable!("a PostgreSQL database")
        };
        let dir = tempfile::tempdir().expect("tempdir");
        acknowledged_tokens_survive(dir.path(), Some(url));
    }
}

/// Imports until the kill, restarts, and reads every acknowledged token back.
fn acknowledged_tokens_survive(dir: &std::path::Path, database: Option<&str>) {
    let mut args = vec!["--allow-private-destinations"];
    if let Some(url) = database {
        args.extend(["--database-url", url]);
    }
    let envs = [("TESSERA_MASTER_KEY", MASTER_KEY)];
    let mut server = serve(dir, &args, &envs);
    let admin = bootstrap(&mut server)["api_key"]
        .as_str()
        .expect("api_key")
        .to_string();
    let base = server.base.clone();
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, Value)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..4)
        .map(|caller| {
            let (base, admin) = (base.clone(), admin.clone());
            let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                for call in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let data: Vec<Value> = (0..20)
                        .map(|i| json!(format!("c{caller}-{call}-{i}")))
                        .collect();
                    let body: Vec<Value> = data
                        .iter()
                        .map(|d| json!({"type": "token", "data": d, "metadata": {"caller": caller.to_string()}}))
                        .collect();
                    let Ok(answer) = tessera_testkit::http_client::send(
                        "POST",
                        &format!("{base}/tokenize"),
                        &[("SVC-API-KEY", &admin), ("Content-Type", "application/json")],
                        Some(json!(body).to_string().into_bytes()),
                    ) else {
                        return; // killed: the call was not acknowledged
                    };
                    assert_eq!(answer.status, 201);
                    let tokens: Value = answer.json();
                    let mut done = acknowledged.lock().expect("lock");
                    for (token, d) in tokens.as_array().expect("array").iter().zip(data) {
                        done.push((token["id"].as_str().expect("id").to_string(), d));
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    server.child.kill().expect("kill -9");
    server.child.wait().expect("reaped");
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.join().expect("caller");
    }
    let acknowledged = acknowledged.lock().expect("lock").clone();
    assert!(
        !acknowledged.is_empty(),
        "some imports were answered before the kill"
    );
    let server = serve(dir, &args, &envs);
    for (id, data) in &acknowledged {
        let (status, token) = get(&format!("{}/tokens/{id}", server.base), &admin);
        assert_eq!(status, 200, "acknowledged token {id} is missing: {token}");
        assert_eq!(&token["data"], data);
    }
    // The restarted service goes on taking imports.
    let (status, _) = post(
        &format!("{}/tokenize", server.base),
        &admin,
        json!([{"type": "token", "data": "after"}]),
    );
    assert_eq!(status, 201);
}
