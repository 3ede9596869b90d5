//! The key-encrypting key in AWS KMS (moto's server as the endpoint), as an operator runs it,
//! on SQLite and on PostgreSQL: tenants made under a file key move into KMS with
//! `rotate-master-key`; `serve` then starts with no file key, tokenizes, detokenizes through
//! the proxy, restarts and reads back, with the endpoint from `--kms-endpoint` or from
//! `AWS_ENDPOINT_URL_KMS` alone; another KMS key opens nothing; when KMS goes away the keys
//! already held keep serving and a new unwrap answers 503; a start without KMS is refused with
//! one clear line and writes no key file. And the moves between custodies that involve KMS:
//! HSM → KMS → another KMS key → another HSM → file.

use std::path::Path;

use serde_json::{json, Value};
use tessera_storage::DatabaseUrl;
use tessera_testkit::{
    db::TestDatabase,
    moto::Moto,
    process::{call, free_port},
    softhsm::{self, PIN, TOKEN, TOKEN_B},
};

use crate::{
    cli::{get, post, refused_for_the_key, run, serve, succeeds},
    hsm::{in_token, token_env, with_token, CURRENT, PREVIOUS},
};

const FILE_KEY: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/// `args` with the flags that put the key in KMS key `key` (at `endpoint` when given).
fn in_kms<'a>(key: &'a str, endpoint: Option<&'a str>, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(["--master-key-provider", "aws-kms", "--kms-key-id", key]);
    if let Some(endpoint) = endpoint {
        all.extend(["--kms-endpoint", endpoint]);
    }
    all
}

/// `args` with `--database-url` when the test runs on PostgreSQL.
fn on<'a>(database: Option<&'a str>, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    if let Some(url) = database {
        all.extend(["--database-url", url]);
    }
    all
}

#[test]
fn the_master_key_lives_in_kms_end_to_end() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    if !lives_in_kms(&rt, dir.path(), None) {
        return;
    }
    if let Some(pg) = rt.block_on(TestDatabase::postgres()) {
        let DatabaseUrl::Postgres { url } = &pg.url else {
            unreachable!("a PostgreSQL database")
        };
        let dir = tempfile::tempdir().expect("tempdir");
        lives_in_kms(&rt, dir.path(), Some(url));
    }
}

/// The walk on one backend; `false` when moto is not installed (outside CI).
fn lives_in_kms(rt: &tokio::runtime::Runtime, dir: &Path, database: Option<&str>) -> bool {
    let Some(moto) = Moto::start() else {
        return false;
    };
    let (key, other_key) =
        rt.block_on(async { (moto.create_key().await, moto.create_key().await) });
    let endpoint = Some(moto.endpoint.as_str());
    let aws = Moto::env();
    let mut with_file = aws.to_vec();
    with_file.push(("TESSERA_MASTER_KEY", FILE_KEY));
    let first = succeeds(
        dir,
        &on(database, &["tenants", "create", "--name", "a"]),
        &with_file,
    );
    let admin = first["api_key"].as_str().expect("api_key").to_string();

    // file → aws-kms.
    let mut moving = aws.to_vec();
    moving.push(("TESSERA_PREVIOUS_MASTER_KEY", FILE_KEY));
    let report = succeeds(
        dir,
        &on(database, &in_kms(&key, endpoint, &["rotate-master-key"])),
        &moving,
    );
    assert_eq!(report["rewrapped"], 1, "{report}");
    refused_for_the_key(
        dir,
        &on(database, &["tenants", "create", "--name", "x"]),
        &with_file,
    );
    refused_for_the_key(
        dir,
        &on(
            database,
            &in_kms(&other_key, endpoint, &["tenants", "create", "--name", "x"]),
        ),
        &aws,
    );

    // KMS alone, its endpoint from AWS_ENDPOINT_URL_KMS: tokenize, detokenize through the proxy.
    let mut by_env = aws.to_vec();
    by_env.push(("AWS_ENDPOINT_URL_KMS", &moto.endpoint));
    let echo = format!("127.0.0.1:{}", free_port());
    let serving = on(
        database,
        &[
            "--no-bootstrap",
            "--allow-private-destinations",
            "--dev-echo",
            &echo,
        ],
    );
    let mut server = serve(dir, &in_kms(&key, None, &serving), &by_env);
    let (id, card) = tokenize_and_proxy(&server.base, &admin, &echo);
    assert!(server.terminate().success());

    // A restart, the endpoint from --kms-endpoint: the token reads back.
    let mut server = serve(dir, &in_kms(&key, endpoint, &serving), &aws);
    let (status, read) = get(&format!("{}/tokens/{id}", server.base), &admin);
    assert_eq!((status, &read["data"]), (200, &card), "{read}");
    let scraped =
        tessera_testkit::http_client::get(&format!("{}/metrics", server.base), &[]).text();
    assert!(
        scraped.contains("tessera_build_info") && !scraped.contains(&key),
        "no key id in /metrics"
    );
    // A tenant made by another process while this one runs: its key is not held here yet.
    let mut logging = aws.to_vec();
    logging.push(("RUST_LOG", "info"));
    let out = run(
        dir,
        &on(
            database,
            &in_kms(&key, endpoint, &["tenants", "create", "--name", "b"]),
        ),
        &logging,
    );
    let logged = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{logged}");
    assert!(logged.contains("custody=aws-kms"), "{logged}");
    assert!(
        !logged.contains(&key) && !logged.contains("testing"),
        "no key id or credential in the log: {logged}"
    );
    let second: Value = serde_json::from_slice(&out.stdout).expect("JSON");

    // KMS goes away: keys already held keep serving, a new unwrap answers 503.
    moto.stop();
    let (status, read) = get(&format!("{}/tokens/{id}", server.base), &admin);
    assert_eq!((status, &read["data"]), (200, &card), "{read}");
    let (status, refused) = post(
        &format!("{}/tokens", server.base),
        second["api_key"].as_str().expect("api_key"),
        json!({"type": "token", "data": "x"}),
    );
    assert_eq!(status, 503, "{refused}");
    assert!(
        !refused.to_string().contains(&key),
        "no key id in the answer: {refused}"
    );
    assert!(server.terminate().success());

    // A start without KMS is refused with one line, and writes no key file.
    let out = run(
        dir,
        &on(
            database,
            &in_kms(&key, endpoint, &["tenants", "create", "--name", "y"]),
        ),
        &aws,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the KMS key cannot be used: cannot reach AWS KMS"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(&key) && !stderr.contains("testing"),
        "no key id or credential: {stderr}"
    );
    assert!(!dir.join("data/master.key").exists(), "no key file written");
    true
}

/// Tokenizes a card as `admin` and sends it through a proxy to the echo at `echo`: the echo
/// received the number. The token's id and data.
fn tokenize_and_proxy(base: &str, admin: &str, echo: &str) -> (String, Value) {
    let card =
        json!({"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030});
    let (status, token) = post(
        &format!("{base}/tokens"),
        admin,
        json!({"type": "card", "data": card}),
    );
    assert_eq!(status, 201, "{token}");
    let id = token["id"].as_str().expect("id").to_string();
    let (status, proxy) = post(
        &format!("{base}/proxies"),
        admin,
        json!({"name": "echo", "destination_url": format!("http://{echo}/v1/charges")}),
    );
    assert_eq!(status, 201, "{proxy}");
    let (status, echoed) = call(
        "POST",
        &format!("{base}/proxy"),
        &[
            ("SVC-PROXY-KEY", proxy["key"].as_str().expect("key")),
            ("SVC-API-KEY", admin),
        ],
        Some(json!({"card": format!("{{{{ {id} | json: '$.number' }}}}")})),
    );
    assert_eq!(status, 200, "{echoed}");
    assert!(echoed.to_string().contains("4242424242424242"), "{echoed}");
    (id, card)
}

/// HSM → KMS → another KMS key → another HSM → a file key, each move followed by a start with
/// only the new custody, which opens every tenant, while the one before opens nothing.
#[test]
fn the_master_key_moves_from_an_hsm_to_kms_and_on() {
    let Some(hsm) = softhsm::token() else {
        return;
    };
    let Some(moto) = Moto::start() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (first, second) = rt.block_on(async { (moto.create_key().await, moto.create_key().await) });
    let endpoint = Some(moto.endpoint.as_str());
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let mut env = token_env(hsm).to_vec();
    env.extend(Moto::env());
    env.push(("TESSERA_PREVIOUS_PKCS11_PIN", PIN));
    for name in ["a", "b"] {
        succeeds(
            dir,
            &in_token(hsm, &["tenants", "create", "--name", name]),
            &env,
        );
    }

    // pkcs11 → aws-kms.
    let moving = with_token(
        hsm,
        PREVIOUS,
        TOKEN,
        &in_kms(&first, endpoint, &["rotate-master-key"]),
    );
    assert_eq!(succeeds(dir, &moving, &env)["rewrapped"], 2);
    succeeds(
        dir,
        &in_kms(&first, endpoint, &["tenants", "create", "--name", "c"]),
        &env,
    );
    refused_for_the_key(
        dir,
        &in_token(hsm, &["tenants", "create", "--name", "x"]),
        &env,
    );

    // aws-kms → another aws-kms key.
    let previous_kms = [
        "--previous-master-key-provider",
        "aws-kms",
        "--previous-kms-key-id",
        &first,
        "--previous-kms-endpoint",
        &moto.endpoint,
    ];
    let mut moving = in_kms(&second, endpoint, &["rotate-master-key"]);
    moving.extend(previous_kms);
    assert_eq!(succeeds(dir, &moving, &env)["rewrapped"], 3);
    succeeds(
        dir,
        &in_kms(&second, endpoint, &["tenants", "create", "--name", "d"]),
        &env,
    );
    refused_for_the_key(
        dir,
        &in_kms(&first, endpoint, &["tenants", "create", "--name", "x"]),
        &env,
    );

    // aws-kms → an HSM (another token).
    let mut moving = with_token(hsm, CURRENT, TOKEN_B, &["rotate-master-key"]);
    moving.extend([
        "--previous-master-key-provider",
        "aws-kms",
        "--previous-kms-key-id",
        &second,
        "--previous-kms-endpoint",
        &moto.endpoint,
    ]);
    assert_eq!(succeeds(dir, &moving, &env)["rewrapped"], 4);
    let in_b = |args: &[&'static str]| with_token(hsm, CURRENT, TOKEN_B, args);
    succeeds(dir, &in_b(&["tenants", "create", "--name", "e"]), &env);
    refused_for_the_key(
        dir,
        &in_kms(&second, endpoint, &["tenants", "create", "--name", "x"]),
        &env,
    );

    // pkcs11 → a file key.
    let mut with_file = env.clone();
    with_file.push(("TESSERA_MASTER_KEY", FILE_KEY));
    let moving = with_token(hsm, PREVIOUS, TOKEN_B, &["rotate-master-key"]);
    assert_eq!(succeeds(dir, &moving, &with_file)["rewrapped"], 5);
    succeeds(dir, &["tenants", "create", "--name", "f"], &with_file);
    refused_for_the_key(dir, &in_b(&["tenants", "create", "--name", "x"]), &env);
}
