//! The engine: compiles transforms and runs them, inline on the calling thread or in sandbox
//! processes, answering `req.svc` calls through the caller's host function.

use std::{future::Future, sync::Arc};

use serde_json::Value;

use crate::{
    config::{EngineConfig, Isolation},
    host::{Inner, Run},
    inline,
    message::{HostError, HostOp, Input, Outcome, TransformError},
    natives::Tags,
    process,
    program::{compile_prelude, CompileError, Compiler, Program},
    taint::Taint,
};

const PRELUDE: &str = include_str!("prelude.js");

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
        tags: (&str, &str),
        input: Input,
        host: Option<H>,
    ) -> Result<Outcome, TransformError>
    where
        H: Fn(HostOp, Value) -> F,
        F: Future<Output = Result<Value, HostError>>,
    {
        let taint = Taint::new();
        self.run_with_taint(program, scope, tags, input, host, &taint)
            .await
    }

    /// [`TransformEngine::run`], with the invocation's [`Taint`]: `host` marks it when it hands
    /// the transform a value that must never reach the transform's caller, and the engine marks
    /// it when the invocation shared its context with one that was marked. The context of a
    /// marked invocation is discarded, never kept warm for a later call: read the mark when the
    /// run ends to decide what the transform may still answer.
    pub async fn run_with_taint<H, F>(
        &self,
        program: Arc<Program>,
        scope: &str,
        (tenant, proxy): (&str, &str),
        input: Input,
        host: Option<H>,
        taint: &Taint,
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
        let run = Run {
            program: &program,
            scope,
            tags,
            input,
            host,
            taint,
        };
        match self.inner.config.isolation {
            Isolation::Inline => inline::run(&self.inner, run).await,
            Isolation::Process => process::run(&self.inner, run).await,
        }
    }
}
