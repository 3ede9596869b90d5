//! What build a process is (docs/operations.md, "Upgrading"): its semantic version and the
//! commit it was built from, shown by `--version`, `/healthz` and `/metrics`
//! (`tessera_build_info`). Each binary installs its own at start ([`install`]); its build
//! script reads the commit from git, or from `TESSERA_BUILD_COMMIT` when building from a
//! source archive.

use std::sync::OnceLock;

use prometheus::proto::MetricFamily;

use crate::metrics::{gauge_family, Family};

/// A build's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildInfo {
    /// The semantic version (`0.2.0`).
    pub version: &'static str,
    /// The commit built (`unknown` when built outside a git checkout).
    pub commit: &'static str,
}

static INSTALLED: OnceLock<BuildInfo> = OnceLock::new();

/// Records this process's build (the first call wins).
pub fn install(info: BuildInfo) {
    let _ = INSTALLED.set(info);
}

/// This process's build: what [`install`] recorded, else this crate's version and an unknown
/// commit (a program embedding the crates).
pub fn current() -> BuildInfo {
    INSTALLED.get().copied().unwrap_or(BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: "unknown",
    })
}

/// `tessera_build_info{version, commit} 1`.
#[derive(Debug, Default, Clone, Copy)]
pub struct BuildInfoMetric;

impl Family for BuildInfoMetric {
    fn families(&self) -> Vec<MetricFamily> {
        let build = current();
        vec![gauge_family(
            "tessera_build_info",
            "The build serving: its version and commit (always 1).",
            &["version", "commit"],
            &[(vec![build.version, build.commit], 1.0)],
        )]
    }
}
