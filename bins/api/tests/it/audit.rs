//! The audit trail end to end: in sync mode a process killed with SIGKILL right
//! after answering has recorded the request, on the management API and on `/proxy`; and
//! `api audit verify` passes, then exits 1 naming the event edited in the database.

use serde_json::{json, Value};

use crate::cli::{bootstrap, command, get, post, serve};

/// `GET url` with headers: the status and the body.
fn get_with(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let answer = tessera_testkit::http_client::get(url, headers);
    (answer.status, answer.text())
}

/// A destination that outlives the restarts: answers every request `200 {}` and closes.
fn destination() -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let _ = reader.get_mut().write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            );
        }
    });
    format!("http://{addr}/charges")
}

fn events(base: &str, admin: &str, query: &str) -> Vec<Value> {
    let (status, page) = get(&format!("{base}/audit-events?size=100&{query}"), admin);
    assert_eq!(status, 200, "{page}");
    page["data"].as_array().expect("data").clone()
}

#[test]
fn sync_events_survive_a_kill_right_after_the_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = serve(dir.path(), &["--allow-private-destinations"], &[]);
    let printed = bootstrap(&mut server);
    let admin = printed["api_key"].as_str().expect("api_key").to_string();
    let base = server.base.clone();
    let (_, app) = post(
        &format!("{base}/applications"),
        &admin,
        json!({"name": "caller", "type": "private", "permissions": ["token:use", "token:create"]}),
    );
    let caller = app["key"].as_str().expect("key").to_string();
    // A GET whose header carries the token.
    let (status, proxy) = post(
        &format!("{base}/proxies"),
        &admin,
        json!({"name": "dest", "destination_url": destination()}),
    );
    assert_eq!(status, 201, "{proxy}");
    let proxy_key = proxy["key"].as_str().expect("key").to_string();

    for round in 0..3 {
        let server_base = server.base.clone();
        let (status, token) = post(
            &format!("{server_base}/tokens"),
            &caller,
            json!({"type": "token", "data": format!("secret-{round}")}),
        );
        assert_eq!(status, 201, "{token}");
        let id = token["id"].as_str().expect("id").to_string();
        let request_id = format!("kill-round-{round}");
        let (status, body) = get_with(
            &format!("{server_base}/proxy"),
            &[
                ("SVC-PROXY-KEY", &proxy_key),
                ("SVC-API-KEY", &caller),
                ("X-Card", &format!("{{{{{id}}}}}")),
                ("X-Request-Id", &request_id),
            ],
        );
        assert_eq!(status, 200, "{body}");
        // SIGKILL at once: no graceful flush.
        server.child.kill().expect("kill -9");
        server.child.wait().expect("reaped");
        server = serve(dir.path(), &["--allow-private-destinations"], &[]);
        let detokenized = events(&server.base, &admin, "action=token.detokenized");
        let this: Vec<&Value> = detokenized
            .iter()
            .filter(|e| e["request_id"] == request_id.as_str())
            .collect();
        assert_eq!(this.len(), 1, "round {round}: {detokenized:#?}");
        assert_eq!(this[0]["resource_ids"], json!([id]));
        let created = events(
            &server.base,
            &admin,
            &format!("action=token.created&resource_id={id}"),
        );
        assert_eq!(created.len(), 1, "round {round}");
    }
}

#[test]
fn verify_passes_then_names_the_edited_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = serve(dir.path(), &[], &[]);
    let printed = bootstrap(&mut server);
    let admin = printed["api_key"].as_str().expect("api_key").to_string();
    for i in 0..4 {
        let (status, _) = post(
            &format!("{}/tokens", server.base),
            &admin,
            json!({"type": "token", "data": i}),
        );
        assert_eq!(status, 201);
    }
    let listed = events(&server.base, &admin, "");
    let target = listed[2]["id"].as_str().expect("id").to_string(); // the second event
    let token = listed[2]["resource_ids"][0]
        .as_str()
        .expect("token")
        .to_string();
    assert!(server.terminate().success());

    let verify = || {
        command(dir.path())
            .args(["audit", "verify"])
            .output()
            .expect("run")
    };
    let out = verify();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["events_checked"], 4);
    assert!(report["broken"].is_null());
    let tenant = printed["tenant_id"].as_str().expect("tenant");
    assert_eq!(report["chains"][0]["head"]["last_seq"], 4);

    let url = tessera_storage::DatabaseUrl::Sqlite {
        path: dir.path().join("data/tessera.db"),
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Name another token in the stored text of that event.
    runtime.block_on(tessera_testkit::tamper::replace_in_audit_lines(
        &url,
        None,
        &token.to_string(),
        "00000000-0000-4000-8000-00000000beef",
    ));
    let out = verify();
    assert_eq!(out.status.code(), Some(1), "a broken chain exits 1");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["broken"]["event_id"], target.as_str());
    assert_eq!(report["broken"]["seq"], 2);
    assert_eq!(report["broken"]["tenant_id"], tenant);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the audit trail is broken at position 2"),
        "{stderr}"
    );
    // One tenant's chain only.
    let out = command(dir.path())
        .args(["audit", "verify", "--tenant", tenant])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
}
