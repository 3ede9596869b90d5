// The commit a binary is built from, for `--version`, `/healthz` and `tessera_build_info`
// (docs/operations.md, "Upgrading"): `TESSERA_BUILD_COMMIT` when set (a build from a source
// archive), else git's short hash of HEAD, else `unknown`.
// Included by each binary's build.rs; only the binaries rebuild when the commit changes.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=TESSERA_BUILD_COMMIT");
    let commit = match std::env::var("TESSERA_BUILD_COMMIT") {
        Ok(commit) if !commit.is_empty() => commit,
        _ => {
            if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
                println!("cargo:rerun-if-changed={dir}/HEAD");
                if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
                    println!("cargo:rerun-if-changed={dir}/{head}");
                }
                println!("cargo:rerun-if-changed={dir}/packed-refs");
            }
            git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo:rustc-env=TESSERA_BUILD_COMMIT={commit}");
}
