//! One worker thread: a QuickJS runtime, warm per-proxy contexts, and the limits.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    rc::Rc,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Instant,
};

use base64::{engine::general_purpose::STANDARD, Engine as _};
use hmac::{Hmac, Mac};
use rquickjs::{
    context::intrinsic, function::Async, AsyncContext, AsyncRuntime, Ctx, Exception, Function,
    Module, Object, Persistent, Promise, Value,
};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use crate::{
    engine::EngineConfig,
    message::{HostCall, HostError, HostOp, TransformError},
    program::Program,
};

/// Log tags of the job being run (tenant and proxy ids), for `console.log`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tags {
    pub tenant: String,
    pub proxy: String,
}

/// One unit of work.
pub(crate) struct Job {
    pub program: Arc<Program>,
    pub prelude: Arc<Program>,
    /// Warm contexts are keyed by this (the proxy id): never shared across proxies.
    pub scope: String,
    pub tags: Tags,
    pub input: String,
    pub host: Option<mpsc::UnboundedSender<HostCall>>,
    pub reply: oneshot::Sender<Result<String, TransformError>>,
    pub abandoned: Arc<AtomicBool>,
}

/// Per-job state the native functions of every context read.
#[derive(Default)]
struct Slot {
    host: RefCell<Option<mpsc::UnboundedSender<HostCall>>>,
    tags: RefCell<Tags>,
    logged: Cell<usize>,
}

/// How the prelude reports a thrown `null` or `undefined` (see `prelude.js`).
const NULLISH_THROWS: [&str; 2] = ["the transform threw null", "the transform threw undefined"];

/// Bytes of `console.log` output kept per invocation.
const LOG_BUDGET: usize = 4096;
/// Calls a warm context serves before it is rebuilt (bounds slow growth inside it).
const CALLS_PER_CONTEXT: u32 = 10_000;

struct Warm {
    // Persistent values must be dropped before their context and runtime.
    run: Persistent<Function<'static>>,
    handler: Persistent<Value<'static>>,
    context: AsyncContext,
    calls: u32,
}

/// A runtime and its contexts. Field order is drop order: contexts before the runtime.
struct Engine {
    contexts: HashMap<(String, [u8; 32]), Warm>,
    runtime: AsyncRuntime,
    deadline: Rc<Cell<Option<Instant>>>,
    /// Invocations left before the heap is measured again (0: measure before the next one).
    calls_until_measure: u32,
    /// The warm context of the previous invocation: a different one means a re-measurement.
    last_context: Option<(String, [u8; 32])>,
}

/// How often the heap in use is measured to set the per-invocation memory limit while the same
/// proxy's context runs call after call. Measuring walks every object of the runtime
/// (`JS_ComputeMemoryUsage`), which cost more than a small transform itself; in between, the
/// limit stays at the last measurement plus the allowance, so an invocation's allowance is
/// short by what *the same proxy's* earlier calls kept alive since then. Any switch to another
/// context measures again, so one proxy's retained memory never shrinks another's allowance.
const MEASURE_EVERY: u32 = 64;

fn exception_message(ctx: &Ctx<'_>) -> String {
    let caught = ctx.catch();
    if let Some(ex) = caught.as_exception() {
        let name = ex.get::<_, Option<String>>("name").ok().flatten();
        let message = ex.message().unwrap_or_default();
        return match name {
            Some(n) if !n.is_empty() && n != "Error" => format!("{n}: {message}"),
            _ => message,
        };
    }
    if caught.is_null() || caught.is_undefined() {
        return "out of memory".to_string();
    }
    caught
        .as_string()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| "a non-Error value was thrown".to_string())
}

fn throw(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    Exception::throw_type(ctx, message)
}

fn hmac_digest(alg: &str, key: &str, data: &str) -> Option<Vec<u8>> {
    macro_rules! mac {
        ($t:ty) => {{
            let mut m = <Hmac<$t> as Mac>::new_from_slice(key.as_bytes()).ok()?;
            m.update(data.as_bytes());
            Some(m.finalize().into_bytes().to_vec())
        }};
    }
    match alg.to_ascii_lowercase().as_str() {
        "sha256" => mac!(sha2::Sha256),
        "sha384" => mac!(sha2::Sha384),
        "sha512" => mac!(sha2::Sha512),
        _ => None,
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn encode(bytes: &[u8], encoding: &str) -> Option<String> {
    match encoding {
        "utf8" | "utf-8" => Some(String::from_utf8_lossy(bytes).into_owned()),
        "hex" => Some(to_hex(bytes)),
        "base64" => Some(STANDARD.encode(bytes)),
        _ => None,
    }
}

fn decode(s: &str, encoding: &str) -> Option<Vec<u8>> {
    match encoding {
        "utf8" | "utf-8" => Some(s.as_bytes().to_vec()),
        "hex" => from_hex(s),
        "base64" => STANDARD.decode(s).ok(),
        _ => None,
    }
}

/// The host functions handed to the prelude.
fn natives<'js>(ctx: &Ctx<'js>, slot: &Rc<Slot>) -> rquickjs::Result<Object<'js>> {
    let native = Object::new(ctx.clone())?;
    let log_slot = slot.clone();
    native.set(
        "log",
        Function::new(ctx.clone(), move |line: String| {
            let used = log_slot.logged.get();
            if used >= LOG_BUDGET {
                return;
            }
            let room = LOG_BUDGET - used;
            let mut cut = line.len().min(room);
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            log_slot.logged.set(used + cut);
            let tags = log_slot.tags.borrow();
            tracing::info!(target: "transform", tenant = %tags.tenant, proxy = %tags.proxy, "{}", &line[..cut]);
        })?,
    )?;
    native.set(
        "btoa",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, s: String| {
            // Latin-1 only, as in browsers.
            let bytes: Option<Vec<u8>> =
                s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
            bytes
                .map(|b| STANDARD.encode(b))
                .ok_or_else(|| throw(&ctx, "btoa: the string contains characters outside Latin-1"))
        })?,
    )?;
    native.set(
        "atob",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, s: String| {
            STANDARD
                .decode(s.trim())
                .map(|b| b.into_iter().map(char::from).collect::<String>())
                .map_err(|_| throw(&ctx, "atob: the string is not valid base64"))
        })?,
    )?;
    native.set(
        "uuid",
        Function::new(ctx.clone(), || uuid::Uuid::new_v4().to_string())?,
    )?;
    native.set(
        "hmac",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, alg: String, key: String, data: String, enc: String| {
                let digest = hmac_digest(&alg, &key, &data).ok_or_else(|| {
                    throw(
                        &ctx,
                        "createHmac: supported algorithms are sha256, sha384 and sha512",
                    )
                })?;
                match enc.as_str() {
                    "hex" => Ok(to_hex(&digest)),
                    "base64" => Ok(STANDARD.encode(&digest)),
                    _ => Err(throw(
                        &ctx,
                        "digest: supported encodings are hex and base64",
                    )),
                }
            },
        )?,
    )?;
    native.set(
        "tob64",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, s: String, enc: String| {
            decode(&s, &enc)
                .map(|b| STANDARD.encode(b))
                .ok_or_else(|| throw(&ctx, "Buffer.from: supported encodings are utf8, hex and base64 (and the input must be valid)"))
        })?,
    )?;
    native.set(
        "fromb64",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, b64: String, enc: String| {
            STANDARD
                .decode(b64)
                .ok()
                .and_then(|b| encode(&b, &enc))
                .ok_or_else(|| {
                    throw(
                        &ctx,
                        "Buffer.toString: supported encodings are utf8, hex and base64",
                    )
                })
        })?,
    )?;
    native.set(
        "url",
        Function::new(ctx.clone(), |href: String, base: String| {
            let parsed = if base.is_empty() {
                url::Url::parse(&href)
            } else {
                url::Url::parse(&base).and_then(|b| b.join(&href))
            };
            match parsed {
                Ok(u) => json!({
                    "href": u.as_str(),
                    "protocol": format!("{}:", u.scheme()),
                    "username": u.username(),
                    "password": u.password().unwrap_or(""),
                    "host": match u.port() { Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")), None => u.host_str().unwrap_or("").to_string() },
                    "hostname": u.host_str().unwrap_or(""),
                    "port": u.port().map(|p| p.to_string()).unwrap_or_default(),
                    "pathname": u.path(),
                    "search": u.query().map(|q| format!("?{q}")).unwrap_or_default(),
                    "hash": u.fragment().map(|f| format!("#{f}")).unwrap_or_default(),
                    "origin": u.origin().ascii_serialization(),
                })
                .to_string(),
                Err(_) => String::new(),
            }
        })?,
    )?;
    let host_slot = slot.clone();
    native.set(
        "host",
        Function::new(
            ctx.clone(),
            Async(move |op: String, payload: String| {
                let channel = host_slot.host.borrow().clone();
                async move {
                    let answer = |r: Result<serde_json::Value, HostError>| match r {
                        Ok(v) => json!({ "ok": v }).to_string(),
                        Err(e) => json!({ "error": { "status": e.status, "message": e.message } })
                            .to_string(),
                    };
                    let Some(channel) = channel else {
                        return answer(Err(HostError {
                            status: 403,
                            message: "req.svc is not available: the proxy has no application"
                                .into(),
                        }));
                    };
                    let Some(op) = HostOp::parse(&op) else {
                        return answer(Err(HostError {
                            status: 400,
                            message: format!("unknown operation {op}"),
                        }));
                    };
                    let payload = serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null);
                    let (reply, answered) = oneshot::channel();
                    if channel.send(HostCall { op, payload, reply }).is_err() {
                        return answer(Err(HostError {
                            status: 500,
                            message: "the invocation has ended".into(),
                        }));
                    }
                    answer(answered.await.unwrap_or_else(|_| {
                        Err(HostError {
                            status: 500,
                            message: "no answer from the host".into(),
                        })
                    }))
                }
            }),
        )?,
    )?;
    Ok(native)
}

impl Engine {
    async fn new(config: &EngineConfig) -> Result<Self, TransformError> {
        let runtime = AsyncRuntime::new().map_err(|e| TransformError::Engine(e.to_string()))?;
        runtime.set_max_stack_size(config.stack_bytes).await;
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let seen = deadline.clone();
        runtime
            .set_interrupt_handler(Some(Box::new(move || {
                seen.get().is_some_and(|d| Instant::now() >= d)
            })))
            .await;
        Ok(Self {
            contexts: HashMap::new(),
            runtime,
            deadline,
            calls_until_measure: 0,
            last_context: None,
        })
    }

    async fn warm(
        &mut self,
        job: &Job,
        slot: &Rc<Slot>,
        max_contexts: usize,
    ) -> Result<&mut Warm, TransformError> {
        let key = (job.scope.clone(), *job.program.hash());
        if self
            .contexts
            .get(&key)
            .is_some_and(|w| w.calls >= CALLS_PER_CONTEXT)
        {
            self.contexts.remove(&key);
        }
        if !self.contexts.contains_key(&key) {
            if self.contexts.len() >= max_contexts {
                self.contexts.clear();
            }
            // A new context changes the heap: measure again before the next invocation.
            self.calls_until_measure = 0;
            let context = AsyncContext::builder()
                .with::<intrinsic::Date>()
                .with::<intrinsic::RegExpCompiler>()
                .with::<intrinsic::RegExp>()
                .with::<intrinsic::Json>()
                .with::<intrinsic::MapSet>()
                .with::<intrinsic::TypedArrays>()
                .with::<intrinsic::Promise>()
                .with::<intrinsic::WeakRef>()
                .with::<intrinsic::Proxy>()
                .build_async(&self.runtime)
                .await
                .map_err(|e| TransformError::Engine(e.to_string()))?;
            let (prelude, program, slot) = (job.prelude.clone(), job.program.clone(), slot.clone());
            let loaded = context
                .async_with(async move |ctx| {
                    let result: rquickjs::Result<_> = async {
                        // Safety: both byte strings were produced by `Module::write` in this
                        // process (crate::program) and are never taken from outside.
                        let base = unsafe { Module::load(ctx.clone(), prelude.bytecode())? };
                        let (base, ready) = base.eval()?;
                        ready.into_future::<()>().await?;
                        let install: Function = base.get("default")?;
                        let run: Function = install.call((natives(&ctx, &slot)?,))?;
                        let user = unsafe { Module::load(ctx.clone(), program.bytecode())? };
                        let (user, ready) = user.eval()?;
                        ready.into_future::<()>().await?;
                        let handler: Value = user.get("default")?;
                        Ok((Persistent::save(&ctx, run), Persistent::save(&ctx, handler)))
                    }
                    .await;
                    result.map_err(|_| exception_message(&ctx))
                })
                .await
                .map_err(TransformError::Crashed)?;
            self.contexts.insert(
                key.clone(),
                Warm {
                    run: loaded.0,
                    handler: loaded.1,
                    context,
                    calls: 0,
                },
            );
        }
        self.contexts
            .get_mut(&key)
            .ok_or_else(|| TransformError::Engine("context vanished".into()))
    }
}

/// The worker loop: runs jobs until the queue closes or this worker is replaced.
pub(crate) fn run_worker(config: EngineConfig, jobs: Arc<Mutex<std::sync::mpsc::Receiver<Job>>>) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        tracing::error!("transform worker: cannot start its runtime");
        return;
    };
    rt.block_on(async move {
        let slot = Rc::new(Slot::default());
        let mut engine: Option<Engine> = None;
        loop {
            let job = {
                let Ok(queue) = jobs.lock() else { return };
                match queue.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                }
            };
            if engine.is_none() {
                match Engine::new(&config).await {
                    Ok(e) => engine = Some(e),
                    Err(e) => {
                        let _ = job.reply.send(Err(e));
                        continue;
                    }
                }
            }
            let Some(current) = engine.as_mut() else {
                continue;
            };
            *slot.host.borrow_mut() = job.host.clone();
            *slot.tags.borrow_mut() = job.tags.clone();
            slot.logged.set(0);
            let (result, discard) = run_job(current, &job, &slot, &config).await;
            *slot.host.borrow_mut() = None;
            if discard || job.abandoned.load(Ordering::SeqCst) {
                // A runtime that hit a limit is never reused.
                engine = None;
            }
            let abandoned = job.abandoned.load(Ordering::SeqCst);
            let _ = job.reply.send(result);
            if abandoned {
                // The engine has started a replacement worker.
                return;
            }
        }
    });
}

/// Runs one job; the flag says whether the runtime must be discarded.
async fn run_job(
    engine: &mut Engine,
    job: &Job,
    slot: &Rc<Slot>,
    config: &EngineConfig,
) -> (Result<String, TransformError>, bool) {
    let deadline = Instant::now() + config.time_limit;
    engine.deadline.set(Some(deadline));
    // The allowance is per invocation: the heap in use (measured every MEASURE_EVERY calls)
    // plus the limit, so what other proxies' warm contexts hold never counts against this one.
    let context = (job.scope.clone(), *job.program.hash());
    if engine.last_context.as_ref() != Some(&context) {
        engine.calls_until_measure = 0;
        engine.last_context = Some(context);
    }
    if engine.calls_until_measure == 0 {
        let usage = engine.runtime.memory_usage().await.malloc_size;
        let limit = usize::try_from(usage.max(0)).unwrap_or(0) + config.memory_limit;
        engine.runtime.set_memory_limit(limit).await;
        engine.calls_until_measure = MEASURE_EVERY;
    }
    engine.calls_until_measure -= 1;
    let deadline_cell = engine.deadline.clone();
    let outcome = async {
        let warm = engine.warm(job, slot, config.max_contexts).await?;
        warm.calls += 1;
        let (run, handler, input) = (warm.run.clone(), warm.handler.clone(), job.input.clone());
        let call = warm.context.async_with(async move |ctx| {
            let result: rquickjs::Result<String> = async {
                let run = run.restore(&ctx)?;
                let handler = handler.restore(&ctx)?;
                let promise: Promise = run.call((handler, input))?;
                promise.into_future::<String>().await
            }
            .await;
            result.map_err(|_| exception_message(&ctx))
        });
        match tokio::time::timeout(config.time_limit, call).await {
            Err(_) => Err(TransformError::TimedOut),
            Ok(Ok(out)) => Ok(out),
            Ok(Err(message)) => Err(TransformError::Crashed(message)),
        }
    }
    .await;
    deadline_cell.set(None);
    let past_deadline = Instant::now() >= deadline;
    let result = match outcome {
        Err(TransformError::Crashed(m)) if past_deadline || m.contains("interrupted") => {
            Err(TransformError::TimedOut)
        }
        Err(TransformError::Crashed(m)) if m.contains("out of memory") => {
            Err(TransformError::OutOfMemory)
        }
        other => other,
    };
    // A thrown null may be an out-of-memory surfacing (the engine had no memory for an error):
    // that heap is not trusted again either.
    let discard = match &result {
        Err(TransformError::TimedOut | TransformError::OutOfMemory | TransformError::Engine(_)) => {
            true
        }
        Err(TransformError::Crashed(m)) => NULLISH_THROWS.contains(&m.as_str()),
        Ok(_) => false,
    };
    (result, discard)
}
