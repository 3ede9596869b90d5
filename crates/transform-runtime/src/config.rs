//! The engine's settings: where transforms run, how sandbox processes start, and the limits.

use std::{ffi::OsString, path::PathBuf, time::Duration};

use crate::runtime::Limits;

/// Where transforms run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// On the thread serving the request, in a QuickJS runtime that thread owns: no hand-off,
    /// no copy. A transform stuck in a long native builtin holds that thread until the builtin
    /// returns (see `docs/operations.md`).
    #[default]
    Inline,
    /// In a pool of sandbox processes that hold no key material and may not open files or
    /// sockets; a process that outlives a transform's time limit is killed.
    Process,
}

/// The command that starts a sandbox process: normally the gateway's own executable with the
/// hidden argument [`SANDBOX_ARG`], whose `main` calls [`crate::sandbox_main`].
#[derive(Debug, Clone)]
pub struct SandboxCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// The hidden first argument that makes a Tessera binary run as a transform sandbox.
pub const SANDBOX_ARG: &str = "__transform-sandbox";

impl SandboxCommand {
    /// The running executable with [`SANDBOX_ARG`].
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self {
            program: std::env::current_exe()?,
            args: vec![SANDBOX_ARG.into()],
        })
    }
}

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Inline or in sandbox processes.
    pub isolation: Isolation,
    /// How sandbox processes are started (process isolation only).
    pub sandbox: Option<SandboxCommand>,
    /// Most sandbox processes each serving thread starts (process isolation only).
    pub processes_per_thread: usize,
    /// Memory one invocation may allocate.
    pub memory_limit: usize,
    /// Wall-clock time one invocation may take, `req.svc` calls included, counted from its
    /// start (not from when it began waiting for a sandbox slot).
    pub time_limit: Duration,
    /// How long an invocation may wait for a sandbox slot before it fails with
    /// [`crate::TransformError::Busy`] (process isolation).
    pub queue_timeout: Duration,
    /// After the time limit, how long a sandbox process gets before it is killed.
    pub grace: Duration,
    /// JavaScript stack size.
    pub stack_bytes: usize,
    /// Warm contexts kept per runtime.
    pub max_contexts: usize,
    /// The uid and gid sandbox processes switch to when the gateway runs as root (process
    /// isolation; default 65534:65534, `nobody`/`nogroup`). Neither may be 0.
    pub sandbox_user: (u32, u32),
    /// A second name of the client `req.svc` (`bt` with `--header-prefix BT`), so transforms
    /// written for another vault's client name run unchanged. `req.svc` is always there.
    pub client_alias: Option<String>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            isolation: Isolation::Inline,
            sandbox: None,
            processes_per_thread: 4,
            memory_limit: 32 * 1024 * 1024,
            time_limit: Duration::from_secs(2),
            queue_timeout: Duration::from_secs(2),
            grace: Duration::from_millis(500),
            stack_bytes: 1024 * 1024,
            max_contexts: 256,
            sandbox_user: (65534, 65534),
            client_alias: None,
        }
    }
}

/// What the warm contexts of one runtime may retain between invocations, in per-invocation
/// allowances.
const RETAINED_PER_ALLOWANCE: usize = 4;

impl EngineConfig {
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            memory: self.memory_limit,
            retained: self.memory_limit.saturating_mul(RETAINED_PER_ALLOWANCE),
            stack: self.stack_bytes,
            max_contexts: self.max_contexts,
            client_alias: self.client_alias.clone(),
        }
    }
}
