//! The engine: compiles transforms and runs them, inline on the calling thread or in sandbox
//! processes, answering `req.svc` calls through the caller's host function.

use std::{ffi::OsString, future::Future, path::PathBuf, sync::Arc, time::Duration};

use serde_json::Value;

use crate::{
    inline,
    message::{HostError, HostOp, Input, Outcome, TransformError},
    natives::Tags,
    process,
    program::{compile_prelude, CompileError, Compiler, Program},
    runtime::Limits,
};

const PRELUDE: &str = include_str!("prelude.js");

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
    /// [`TransformError::Busy`] (process isolation).
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
        }
    }
}

pub(crate) struct Inner {
    pub(crate) config: EngineConfig,
    compiler: Compiler,
    pub(crate) prelude: Arc<Program>,
}

/// Compiles and runs transforms. Cheap to clone; each thread that calls [`TransformEngine::run`]
/// gets its own runtime (inline) or its own sandbox processes (process isolation).
#[derive(Clone)]
pub struct TransformEngine {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for TransformEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransformEngine")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl TransformEngine {
    /// An engine with `config`. Runtimes and processes are started on first use, per thread.
    pub fn new(config: EngineConfig) -> Result<Self, TransformError> {
        if config.isolation == Isolation::Process && config.sandbox.is_none() {
            return Err(TransformError::Engine(
                "process isolation needs a sandbox command".into(),
            ));
        }
        let prelude = compile_prelude(PRELUDE)
            .map_err(|e| TransformError::Engine(format!("prelude: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                compiler: Compiler::default(),
                prelude,
            }),
        })
    }

    /// The settings.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Compiles `source` (cached by hash). A syntax error names the line.
    pub fn compile(&self, source: &str) -> Result<Arc<Program>, CompileError> {
        self.inner.compiler.compile(source)
    }

    /// Runs `program` on `input`. `scope` keys warm contexts (use the proxy id): never shared
    /// across scopes. `tags` (tenant, proxy) label `console.log` lines. With `host`, `req.svc`
    /// exists and each of its calls is answered by `host`, on this thread, while other work on
    /// the thread goes on.
    pub async fn run<H, F>(
        &self,
        program: Arc<Program>,
        scope: &str,
        (tenant, proxy): (&str, &str),
        input: Input,
        host: Option<H>,
    ) -> Result<Outcome, TransformError>
    where
        H: Fn(HostOp, Value) -> F,
        F: Future<Output = Result<Value, HostError>>,
    {
        let tags = Tags {
            tenant: tenant.to_string(),
            proxy: proxy.to_string(),
        };
        // Each mode starts the clock when the invocation starts, not when it was asked for.
        match self.inner.config.isolation {
            Isolation::Inline => inline::run(&self.inner, &program, scope, tags, input, host).await,
            Isolation::Process => {
                process::run(&self.inner, &program, scope, tags, input, host).await
            }
        }
    }
}

/// Answers `calls` with `host`, concurrently, as JSON text.
pub(crate) async fn answer<H, F>(
    host: Option<&H>,
    calls: Vec<crate::natives::PendingCall>,
) -> Vec<(u64, Result<String, HostError>)>
where
    H: Fn(HostOp, Value) -> F,
    F: Future<Output = Result<Value, HostError>>,
{
    let answers = calls.into_iter().map(|call| async move {
        let result = match host {
            Some(h) => {
                let payload = serde_json::from_str(&call.payload).unwrap_or(Value::Null);
                h(call.op, payload).await.map(|v| v.to_string())
            }
            None => Err(HostError {
                status: 403,
                message: "req.svc is not available: the proxy has no application".into(),
            }),
        };
        (call.id, result)
    });
    futures_util::future::join_all(answers).await
}
