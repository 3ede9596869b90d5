//! The engine: a pool of worker threads, job dispatch, the host-call loop, and the outer
//! wall-clock timeout that catches what the interrupt handler cannot (a long native builtin).

use std::{
    future::Future,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc, Arc, Mutex,
    },
    time::Duration,
};

use serde_json::Value;
use tokio::sync::{mpsc as tokio_mpsc, oneshot};

use crate::{
    message::{HostError, HostOp, Outcome, TransformError},
    program::{compile_prelude, CompileError, Compiler, Program},
    worker::{run_worker, Job, Tags},
};

const PRELUDE: &str = include_str!("prelude.js");

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Worker threads (one QuickJS runtime each).
    pub workers: usize,
    /// Memory one invocation may allocate.
    pub memory_limit: usize,
    /// Wall-clock time one invocation may take.
    pub time_limit: Duration,
    /// JavaScript stack size.
    pub stack_bytes: usize,
    /// Warm contexts kept per worker.
    pub max_contexts: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_limit: 32 * 1024 * 1024,
            time_limit: Duration::from_secs(2),
            stack_bytes: 1024 * 1024,
            max_contexts: 256,
        }
    }
}

/// Native stack of a worker thread: well above the JavaScript stack limit.
const THREAD_STACK: usize = 16 * 1024 * 1024;
/// Grace after the time limit before the caller gives up on a worker.
const GRACE: Duration = Duration::from_millis(500);

struct Inner {
    config: EngineConfig,
    compiler: Compiler,
    prelude: Arc<Program>,
    sender: Mutex<mpsc::Sender<Job>>,
    receiver: Arc<Mutex<mpsc::Receiver<Job>>>,
}

/// Runs transforms on a pool of sandboxed QuickJS runtimes. Cheap to clone.
#[derive(Clone)]
pub struct TransformEngine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TransformEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransformEngine")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl TransformEngine {
    /// Starts the worker threads.
    pub fn new(config: EngineConfig) -> Result<Self, TransformError> {
        let prelude = compile_prelude(PRELUDE)
            .map_err(|e| TransformError::Engine(format!("prelude: {e}")))?;
        let (sender, receiver) = mpsc::channel();
        let engine = Self {
            inner: Arc::new(Inner {
                compiler: Compiler::default(),
                prelude,
                sender: Mutex::new(sender),
                receiver: Arc::new(Mutex::new(receiver)),
                config,
            }),
        };
        for _ in 0..engine.inner.config.workers.max(1) {
            engine.spawn_worker()?;
        }
        Ok(engine)
    }

    fn spawn_worker(&self) -> Result<(), TransformError> {
        let (config, jobs) = (self.inner.config.clone(), self.inner.receiver.clone());
        std::thread::Builder::new()
            .name("transform".into())
            .stack_size(THREAD_STACK)
            .spawn(move || run_worker(config, jobs))
            .map(|_| ())
            .map_err(|e| TransformError::Engine(format!("cannot start a worker: {e}")))
    }

    /// Compiles `source` (cached by hash). A syntax error names the line.
    pub fn compile(&self, source: &str) -> Result<Arc<Program>, CompileError> {
        self.inner.compiler.compile(source)
    }

    /// Runs `program` with `input` (the `req` object without `svc`, as JSON). `scope` keys warm
    /// contexts (use the proxy id); `tenant`/`proxy` tag `console.log` lines. With `host`,
    /// `req.svc` exists and each of its calls is answered by `host`.
    pub async fn run<H, F>(
        &self,
        program: Arc<Program>,
        scope: &str,
        (tenant, proxy): (&str, &str),
        mut input: Value,
        host: Option<H>,
    ) -> Result<Outcome, TransformError>
    where
        H: Fn(HostOp, Value) -> F,
        F: Future<Output = Result<Value, HostError>>,
    {
        if let Value::Object(map) = &mut input {
            map.insert("svc".into(), Value::Bool(host.is_some()));
        }
        let (host_tx, mut host_rx) = tokio_mpsc::unbounded_channel();
        let (reply, mut answer) = oneshot::channel();
        let abandoned = Arc::new(AtomicBool::new(false));
        let job = Job {
            program,
            prelude: self.inner.prelude.clone(),
            scope: scope.to_string(),
            tags: Tags {
                tenant: tenant.to_string(),
                proxy: proxy.to_string(),
            },
            input: input.to_string(),
            host: host.as_ref().map(|_| host_tx.clone()),
            reply,
            abandoned: abandoned.clone(),
        };
        drop(host_tx);
        self.inner
            .sender
            .lock()
            .map_err(|_| TransformError::Engine("job queue poisoned".into()))?
            .send(job)
            .map_err(|_| TransformError::Engine("no transform workers".into()))?;
        let limit = tokio::time::sleep(self.inner.config.time_limit + GRACE);
        tokio::pin!(limit);
        let raw = loop {
            tokio::select! {
                result = &mut answer => break result.map_err(|_| TransformError::Engine("the worker stopped".into()))??,
                Some(call) = host_rx.recv() => {
                    let answer = match &host {
                        Some(h) => h(call.op, call.payload).await,
                        None => Err(HostError { status: 403, message: "req.svc is not available".into() }),
                    };
                    let _ = call.reply.send(answer);
                }
                () = &mut limit => {
                    // The worker is stuck in native code the interrupt handler cannot reach:
                    // give up on it, and replace it so capacity does not shrink.
                    abandoned.store(true, Ordering::SeqCst);
                    tracing::warn!(proxy, "transform exceeded its wall-clock limit; replacing its worker");
                    self.spawn_worker()?;
                    return Err(TransformError::TimedOut);
                }
            }
        };
        serde_json::from_str::<Outcome>(&raw)
            .map_err(|e| TransformError::Crashed(format!("unexpected transform result: {e}")))
    }
}
