//! The key-encrypting key in an HSM (SoftHSM over PKCS#11), as an operator runs it: tenants
//! made under a file key move into the token with `rotate-master-key`, after which the token
//! alone opens the data and the file key nothing; `serve` works on the token; a wrong PIN or a
//! missing flag stops start-up with a line that says what to fix, and never the PIN.

use std::path::Path;

use serde_json::json;
use tessera_testkit::softhsm::{self, KEY, PIN, TOKEN, TOKEN_B};

use crate::cli::{post, refused_for_the_key, run, serve, succeeds};

const OLD: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/// The flags that put the key in the test token.
pub(crate) fn in_token<'a>(hsm: &'a softhsm::SoftHsm, args: &[&'a str]) -> Vec<&'a str> {
    with_token(hsm, CURRENT, TOKEN, args)
}

/// The current custody's flags, and the previous custody's.
pub(crate) const CURRENT: [&str; 4] = [
    "--master-key-provider",
    "--pkcs11-module",
    "--pkcs11-token-label",
    "--pkcs11-key-label",
];
pub(crate) const PREVIOUS: [&str; 4] = [
    "--previous-master-key-provider",
    "--previous-pkcs11-module",
    "--previous-pkcs11-token-label",
    "--previous-pkcs11-key-label",
];

/// `args` with `flags` (current or previous) naming `token`'s key.
pub(crate) fn with_token<'a>(
    hsm: &'a softhsm::SoftHsm,
    flags: [&'static str; 4],
    token: &'a str,
    args: &[&'a str],
) -> Vec<&'a str> {
    let [provider, module, token_label, key_label] = flags;
    let mut all = args.to_vec();
    all.extend([
        provider,
        "pkcs11",
        module,
        hsm.module.to_str().expect("path"),
        token_label,
        token,
        key_label,
        KEY,
    ]);
    all
}

/// The environment that opens the test token: its SoftHSM configuration and the user PIN.
pub(crate) fn token_env(hsm: &softhsm::SoftHsm) -> [(&'static str, &str); 2] {
    let conf = hsm.conf.to_str().expect("path");
    [("SOFTHSM2_CONF", conf), ("TESSERA_PKCS11_PIN", PIN)]
}

#[test]
fn the_master_key_moves_into_an_hsm_and_serves_from_it() {
    let Some(hsm) = softhsm::token() else {
        return;
    };
    let conf = hsm.conf.to_str().expect("path");
    let env = token_env(hsm);
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    for name in ["a", "b"] {
        succeeds(
            dir,
            &["tenants", "create", "--name", name],
            &[("TESSERA_MASTER_KEY", OLD)],
        );
    }
    // The token alone does not open keys the file key wrapped, until the move.
    refused_for_the_key(
        dir,
        &in_token(hsm, &["tenants", "create", "--name", "x"]),
        &env,
    );
    let mut moving = env.to_vec();
    moving.push(("TESSERA_PREVIOUS_MASTER_KEY", OLD));
    let report = succeeds(dir, &in_token(hsm, &["rotate-master-key"]), &moving);
    assert_eq!(report["rewrapped"], 2, "{report}");
    let created = succeeds(
        dir,
        &in_token(hsm, &["tenants", "create", "--name", "c"]),
        &env,
    );
    refused_for_the_key(
        dir,
        &["tenants", "create", "--name", "d"],
        &[("TESSERA_MASTER_KEY", OLD)],
    );
    serves_from_the_token(dir, hsm, &env, created["api_key"].as_str().expect("key"));
    wrong_pins_and_missing_flags_are_refused(dir, hsm, conf);
}

fn serves_from_the_token(dir: &Path, hsm: &softhsm::SoftHsm, env: &[(&str, &str)], key: &str) {
    let mut server = serve(dir, &in_token(hsm, &["--no-bootstrap"]), env);
    let (status, token) = post(
        &format!("{}/tokens", server.base),
        key,
        json!({"type": "card", "data": {"number": "4242424242424242"}}),
    );
    assert_eq!(status, 201, "{token}");
    assert!(server.terminate().success());
}

fn wrong_pins_and_missing_flags_are_refused(dir: &Path, hsm: &softhsm::SoftHsm, conf: &str) {
    let args = in_token(hsm, &["tenants", "create", "--name", "e"]);
    let out = run(
        dir,
        &args,
        &[("SOFTHSM2_CONF", conf), ("TESSERA_PKCS11_PIN", "987654")],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot log in to the PKCS#11 token"),
        "{stderr}"
    );
    assert!(!stderr.contains("987654"), "no PIN in the error");
    let out = run(
        dir,
        &[
            "tenants",
            "create",
            "--name",
            "f",
            "--master-key-provider",
            "pkcs11",
        ],
        &[("SOFTHSM2_CONF", conf)],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--pkcs11-module"), "{stderr}");
}

/// 24 processes starting at once on one token all find it: a module that misses the token at
/// initialisation (SoftHSM skips one another process holds locked) is initialised again and
/// looked in again, within the 10 s lookup time (3 of 24 such starts failed before).
#[test]
fn concurrent_starts_all_find_the_token() {
    let Some(hsm) = softhsm::token() else {
        return;
    };
    let env = token_env(hsm);
    let dirs: Vec<tempfile::TempDir> = (0..24).map(|_| tempfile::tempdir().expect("dir")).collect();
    let children: Vec<std::process::Child> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let name = format!("t{i}");
            crate::cli::command(dir.path())
                .args(in_token(hsm, &["tenants", "create", "--name", &name]))
                .envs(env)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let failed: Vec<String> = children
        .into_iter()
        .map(|child| child.wait_with_output().expect("wait"))
        .filter(|out| !out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stderr).into_owned())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 24 starts failed: {failed:?}",
        failed.len()
    );
}

/// From one HSM to another: tenants under token A move to token B with `rotate-master-key`
/// and token A named by the `--previous-*` flags; then token B alone opens them and token A
/// nothing.
#[test]
fn the_master_key_moves_from_one_hsm_to_another() {
    let Some(hsm) = softhsm::token() else {
        return;
    };
    let env = token_env(hsm);
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    for name in ["a", "b"] {
        succeeds(
            dir,
            &in_token(hsm, &["tenants", "create", "--name", name]),
            &env,
        );
    }
    // Token B alone opens nothing yet.
    let in_b = |args: &[&'static str]| with_token(hsm, CURRENT, TOKEN_B, args);
    refused_for_the_key(dir, &in_b(&["tenants", "create", "--name", "x"]), &env);
    let moving = with_token(hsm, PREVIOUS, TOKEN, &in_b(&["rotate-master-key"]));
    let mut moving_env = env.to_vec();
    moving_env.push(("TESSERA_PREVIOUS_PKCS11_PIN", PIN));
    let report = succeeds(dir, &moving, &moving_env);
    assert_eq!(report["rewrapped"], 2, "{report}");
    succeeds(dir, &in_b(&["tenants", "create", "--name", "c"]), &env);
    refused_for_the_key(
        dir,
        &in_token(hsm, &["tenants", "create", "--name", "d"]),
        &env,
    );
    // A previous HSM named without its PIN stops the move with a line saying what to give.
    let out = crate::cli::run(dir, &moving, &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("TESSERA_PREVIOUS_PKCS11_PIN"),
        "{stderr}"
    );
}
