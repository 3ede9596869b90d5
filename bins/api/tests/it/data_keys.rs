//! `api data-keys` as an operator runs it, beside a serving `api` (docs/operations.md,
//! "Rotating data keys"): a rotation killed with SIGKILL part-way resumes when run again and
//! finishes; the server creates and reads tokens and proxies calls throughout; `retire` is refused
//! while rows use the old version and works after. On SQLite and PostgreSQL with the file key,
//! and with the key-encrypting key in SoftHSM.

use std::{
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use tessera_storage::DatabaseUrl;
use tessera_testkit::{
    db::TestDatabase,
    process::{call, free_port},
    softhsm,
};

use crate::{
    cli::{command, get, post, run, serve, succeeds, MASTER_KEY},
    hsm::{in_token, token_env},
};

/// Tokens, a proxy to the dev echo, and what each token holds.
struct Served {
    base: String,
    admin: String,
    proxy_key: String,
    tokens: Vec<(String, Value)>,
}

impl Served {
    /// Creates one more token (during the rotation) and keeps it with the others.
    fn create(&mut self) {
        let data = json!({"secret": format!("during-{}", self.tokens.len())});
        let (status, token) = post(
            &format!("{}/tokens", self.base),
            &self.admin,
            json!({"type": "token", "data": data}),
        );
        assert_eq!(status, 201, "a create during the rotation: {token}");
        self.tokens
            .push((token["id"].as_str().expect("id").to_string(), data));
    }

    /// Every token reads back as written, and the proxy detokenizes the first.
    fn check(&self) {
        for (id, data) in &self.tokens {
            let (status, read) = get(&format!("{}/tokens/{id}", self.base), &self.admin);
            assert_eq!((status, &read["data"]), (200, data), "{read}");
        }
        let (id, data) = &self.tokens[0];
        let (status, echoed) = call(
            "POST",
            &format!("{}/proxy", self.base),
            &[
                ("SVC-PROXY-KEY", &self.proxy_key),
                ("SVC-API-KEY", &self.admin),
            ],
            Some(json!({"secret": format!("{{{{ {id} | json: '$.secret' }}}}")})),
        );
        assert_eq!(status, 200, "{echoed}");
        assert!(echoed
            .to_string()
            .contains(data["secret"].as_str().expect("secret")));
    }
}

fn fill(base: &str, admin: &str, echo: &str, count: usize) -> Served {
    let mut tokens = Vec::new();
    for n in 0..count {
        let data = json!({"secret": format!("s-{n}")});
        let (status, token) = post(
            &format!("{base}/tokens"),
            admin,
            json!({"type": "token", "data": data}),
        );
        assert_eq!(status, 201, "{token}");
        tokens.push((token["id"].as_str().expect("id").to_string(), data));
    }
    let (status, proxy) = post(
        &format!("{base}/proxies"),
        admin,
        json!({"name": "echo", "destination_url": format!("http://{echo}/v1")}),
    );
    assert_eq!(status, 201, "{proxy}");
    Served {
        base: base.to_string(),
        admin: admin.to_string(),
        proxy_key: proxy["key"].as_str().expect("key").to_string(),
        tokens,
    }
}

fn status(dir: &Path, args: &[&str], envs: &[(&str, &str)], tenant: &str) -> Value {
    let mut all = vec!["data-keys", "status", "--tenant", tenant];
    all.extend(args);
    succeeds(dir, &all, envs)
}

/// One walk: tokens under version 1; a rotation killed part-way and run again; retire.
fn rotate_killed_and_resumed(dir: &Path, flags: &[&str], envs: &[(&str, &str)]) {
    let created = succeeds(
        dir,
        &[&["tenants", "create", "--name", "acme"][..], flags].concat(),
        envs,
    );
    let (tenant, admin) = (
        created["tenant_id"].as_str().expect("tenant"),
        created["api_key"].as_str().expect("key"),
    );
    let echo = format!("127.0.0.1:{}", free_port());
    let serving = [
        &[
            "--no-bootstrap",
            "--allow-private-destinations",
            "--dev-echo",
            &echo,
        ][..],
        flags,
    ]
    .concat();
    let mut server = serve(dir, &serving, envs);
    let mut served = fill(&server.base, admin, &echo, 150);

    // A slow rotation, killed once it has re-encrypted some rows.
    let rotate = [
        &[
            "data-keys",
            "rotate",
            "--tenant",
            tenant,
            "--lease-seconds",
            "2",
        ][..],
        flags,
    ]
    .concat();
    let mut slow = command(dir);
    slow.args(&rotate)
        .args(["--rows-per-second", "20"])
        .envs(envs.iter().copied())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("rotate.log")).expect("log"));
    let mut child = slow.spawn().expect("spawn rotate");
    let started = Instant::now();
    loop {
        let now = status(dir, flags, envs, tenant);
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the job never progressed: {now} {}",
            std::fs::read_to_string(dir.join("rotate.log")).unwrap_or_default()
        );
        served.create();
        served.check();
        if now["job"]["rows_done"].as_u64().unwrap_or(0) >= 20 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let halfway = status(dir, flags, envs, tenant);
    assert!(halfway["job"]["finished_at"].is_null(), "{halfway}");
    assert_eq!(halfway["current_version"], 2, "{halfway}");
    served.check();

    // Refused while rows use version 1.
    let retire = [&["data-keys", "retire", "--tenant", tenant][..], flags].concat();
    let out = run(dir, &retire, envs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("rows still use version 1"),
        "{stderr}"
    );

    // Run again: it takes over once the lease runs out, and finishes.
    let done = succeeds(
        dir,
        &[&rotate[..], &["--rows-per-second", "1000"]].concat(),
        envs,
    );
    assert_eq!(
        done["versions"],
        json!([{"version": 1, "rows": 0}, {"version": 2, "rows": served.tokens.len() + 1}]),
        "{done}"
    );
    served.check();
    assert_eq!(succeeds(dir, &retire, envs)["retired"], 1);
    let after = status(dir, flags, envs, tenant);
    assert_eq!(
        after["versions"],
        json!([{"version": 2, "rows": served.tokens.len() + 1}]),
        "{after}"
    );
    // The server drops the retired version within its 5 s refresh and still reads everything.
    std::thread::sleep(Duration::from_secs(6));
    served.check();
    assert!(server.terminate().success());
}

#[test]
fn a_rotation_killed_part_way_resumes_and_finishes_while_the_server_serves() {
    let envs = [("TESSERA_MASTER_KEY", MASTER_KEY)];
    let dir = tempfile::tempdir().expect("tempdir");
    rotate_killed_and_resumed(dir.path(), &[], &envs);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Some(pg) = rt.block_on(TestDatabase::postgres()) {
        let DatabaseUrl::Postgres { url } = &pg.url else {
            unreachable!("a PostgreSQL database")
        };
        let dir = tempfile::tempdir().expect("tempdir");
        rotate_killed_and_resumed(dir.path(), &["--database-url", url], &envs);
    }
}

/// The same with the key-encrypting key in SoftHSM: the new version is wrapped in the token.
#[test]
fn the_data_key_rotates_with_the_key_in_an_hsm() {
    let Some(hsm) = softhsm::token() else {
        return;
    };
    let env = token_env(hsm);
    let dir = tempfile::tempdir().expect("tempdir");
    rotate_killed_and_resumed(dir.path(), &in_token(hsm, &[]), &env);
}
