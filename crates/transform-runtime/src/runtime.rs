//! One QuickJS runtime with its warm per-proxy contexts, and the step-wise driver of an
//! invocation. The same code runs transforms inline (on the thread serving the request) and in
//! sandbox processes.
//!
//! An invocation runs in *segments*: synchronous stretches of JavaScript, each ending with the
//! engine's job queue drained. A segment ends in one of three ways: the transform's promise
//! settled (done), it awaits `req.svc` calls (the caller answers them, asynchronously or over a
//! socket, and resumes it), or it awaits nothing that can ever settle (a failure: there are no
//! timers). Between segments no JavaScript runs, so several invocations can interleave on one
//! runtime while they wait for the vault, and every job in the queue belongs to the invocation
//! whose segment is running.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    rc::Rc,
    time::Instant,
};

use rquickjs::{
    context::intrinsic, promise::PromiseState, Array, Context, Ctx, Function, Module, Object,
    Persistent, Promise, Runtime, Value,
};

use crate::{
    message::{Body, HostError, Input, Outcome, TransformError},
    natives::{natives, LogSink, PendingCall, Shared, Tags},
    program::Program,
};

/// Calls a warm context serves before it is rebuilt (bounds slow growth inside it).
const CALLS_PER_CONTEXT: u32 = 10_000;

/// How often the heap in use is measured to set the per-invocation memory limit while the same
/// proxy's context runs call after call. Measuring walks every object of the runtime, which
/// costs more than a small transform; in between, the limit stays at the last measurement plus
/// the allowance. Any switch to another context measures again, so one proxy's retained memory
/// never shrinks another's allowance.
const MEASURE_EVERY: u32 = 64;

/// Limits of a runtime.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) memory: usize,
    pub(crate) stack: usize,
    pub(crate) max_contexts: usize,
}

/// One unit of work.
pub(crate) struct Job<'a> {
    pub(crate) program: &'a Program,
    pub(crate) prelude: &'a Program,
    /// Warm contexts are keyed by this (the proxy id): never shared across proxies.
    pub(crate) scope: &'a str,
    pub(crate) tags: Tags,
    pub(crate) input: Input,
    pub(crate) svc: bool,
    pub(crate) deadline: Instant,
}

/// Where an invocation stands after a segment.
#[derive(Debug)]
pub(crate) enum Step {
    /// It finished.
    Done(Result<Outcome, TransformError>),
    /// It awaits these `req.svc` calls.
    Waiting(Vec<PendingCall>),
}

type ContextKey = (String, [u8; 32]);

struct Warm {
    // Persistent values must be dropped before their context and runtime.
    run: Persistent<Function<'static>>,
    handler: Persistent<Value<'static>>,
    context: Context,
    calls: u32,
}

/// A QuickJS runtime and its warm contexts. Field order is drop order: contexts before the
/// runtime.
pub(crate) struct JsRuntime {
    contexts: RefCell<HashMap<ContextKey, Warm>>,
    shared: Rc<Shared>,
    deadline: Rc<Cell<Option<Instant>>>,
    calls_until_measure: Cell<u32>,
    last_context: RefCell<Option<ContextKey>>,
    next_invocation: Cell<u64>,
    broken: Cell<bool>,
    limits: Limits,
    runtime: Runtime,
}

/// An invocation in progress. Field order is drop order: its JavaScript values before the
/// runtime they live in.
pub(crate) struct Invocation {
    promise: Persistent<Promise<'static>>,
    context: Context,
    id: u64,
    tags: Tags,
    deadline: Instant,
    rt: Rc<JsRuntime>,
}

fn engine_error(e: impl std::fmt::Display) -> TransformError {
    TransformError::Engine(e.to_string())
}

/// The message of the exception pending in `ctx`, without a stack trace.
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

/// Runs every pending job; an error leaves its exception in the context.
fn drain(ctx: &Ctx<'_>) {
    while ctx.execute_pending_job() {}
}

impl JsRuntime {
    pub(crate) fn new(limits: Limits, log: LogSink) -> Result<Rc<Self>, TransformError> {
        let runtime = Runtime::new().map_err(engine_error)?;
        runtime.set_max_stack_size(limits.stack);
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let seen = deadline.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            seen.get().is_some_and(|d| Instant::now() >= d)
        })));
        Ok(Rc::new(Self {
            contexts: RefCell::new(HashMap::new()),
            shared: Rc::new(Shared::new(log)),
            deadline,
            calls_until_measure: Cell::new(0),
            last_context: RefCell::new(None),
            next_invocation: Cell::new(1),
            broken: Cell::new(false),
            limits,
            runtime,
        }))
    }

    /// True once a limit was hit or the engine failed: no new invocation may start here.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.get()
    }

    /// Sets the memory limit for an invocation of context `key`: the heap in use (measured when
    /// the context changes, else every [`MEASURE_EVERY`] calls) plus the allowance.
    fn set_memory_limit(&self, key: &ContextKey) {
        if self.last_context.borrow().as_ref() != Some(key) {
            self.calls_until_measure.set(0);
            *self.last_context.borrow_mut() = Some(key.clone());
        }
        if self.calls_until_measure.get() == 0 {
            let usage = self.runtime.memory_usage().malloc_size;
            let limit = usize::try_from(usage.max(0)).unwrap_or(0) + self.limits.memory;
            self.runtime.set_memory_limit(limit);
            self.calls_until_measure.set(MEASURE_EVERY);
        }
        self.calls_until_measure
            .set(self.calls_until_measure.get() - 1);
    }

    /// The warm context for `job`, built when missing.
    fn warm(
        &self,
        job: &Job<'_>,
    ) -> Result<
        (
            Context,
            Persistent<Function<'static>>,
            Persistent<Value<'static>>,
        ),
        TransformError,
    > {
        let key = (job.scope.to_string(), *job.program.hash());
        let mut contexts = self.contexts.borrow_mut();
        if contexts
            .get(&key)
            .is_some_and(|w| w.calls >= CALLS_PER_CONTEXT)
        {
            contexts.remove(&key);
        }
        if !contexts.contains_key(&key) {
            if contexts.len() >= self.limits.max_contexts {
                contexts.clear();
            }
            // A new context changes the heap: measure again before the next invocation.
            self.calls_until_measure.set(0);
            let context = Context::builder()
                .with::<intrinsic::Date>()
                .with::<intrinsic::RegExpCompiler>()
                .with::<intrinsic::RegExp>()
                .with::<intrinsic::Json>()
                .with::<intrinsic::MapSet>()
                .with::<intrinsic::TypedArrays>()
                .with::<intrinsic::Promise>()
                .with::<intrinsic::WeakRef>()
                .with::<intrinsic::Proxy>()
                .build(&self.runtime)
                .map_err(engine_error)?;
            self.deadline.set(Some(job.deadline));
            let loaded = context.with(|ctx| {
                let result: rquickjs::Result<_> = (|| {
                    // Safety: both byte strings were produced by `Module::write` in this
                    // process (crate::program), or sent by the process that did over its
                    // private socket; they are never taken from anywhere else.
                    let base = unsafe { Module::load(ctx.clone(), job.prelude.bytecode())? };
                    let (base, ready) = base.eval()?;
                    drain(&ctx);
                    settled(&ready)?;
                    let install: Function = base.get("default")?;
                    let run: Function = install.call((natives(&ctx, &self.shared)?,))?;
                    let user = unsafe { Module::load(ctx.clone(), job.program.bytecode())? };
                    let (user, ready) = user.eval()?;
                    drain(&ctx);
                    settled(&ready)?;
                    let handler: Value = user.get("default")?;
                    Ok((Persistent::save(&ctx, run), Persistent::save(&ctx, handler)))
                })();
                result.map_err(|_| exception_message(&ctx))
            });
            self.deadline.set(None);
            let (run, handler) = loaded.map_err(|m| self.failure(m, job.deadline))?;
            contexts.insert(
                key.clone(),
                Warm {
                    run,
                    handler,
                    context,
                    calls: 0,
                },
            );
        }
        let warm = contexts
            .get_mut(&key)
            .ok_or_else(|| TransformError::Engine("context vanished".into()))?;
        warm.calls += 1;
        Ok((warm.context.clone(), warm.run.clone(), warm.handler.clone()))
    }

    /// Maps a failure message to an error, marking the runtime broken when a limit was hit.
    fn failure(&self, message: String, deadline: Instant) -> TransformError {
        let error = if Instant::now() >= deadline || message.contains("interrupted") {
            TransformError::TimedOut
        } else if message.contains("out of memory") {
            TransformError::OutOfMemory
        } else {
            TransformError::Crashed(message)
        };
        if !matches!(error, TransformError::Crashed(_)) {
            self.broken.set(true);
        }
        error
    }

    /// Starts `job`: its first segment.
    pub(crate) fn start(
        self: &Rc<Self>,
        job: Job<'_>,
    ) -> Result<(Invocation, Step), TransformError> {
        let key = (job.scope.to_string(), *job.program.hash());
        self.set_memory_limit(&key);
        let (context, run, handler) = self.warm(&job)?;
        let id = self.next_invocation.get();
        self.next_invocation.set(id + 1);
        self.enter(id, &job.tags, job.svc, job.deadline);
        self.shared.logged.set(0);
        let started = context.with(|ctx| {
            let result: rquickjs::Result<Persistent<Promise<'static>>> = (|| {
                let run = run.restore(&ctx)?;
                let handler = handler.restore(&ctx)?;
                let (input, configuration) = to_js(&ctx, &job.input)?;
                let promise: Promise = run.call((handler, input, configuration, job.svc))?;
                drain(&ctx);
                Ok(Persistent::save(&ctx, promise))
            })();
            result.map_err(|_| exception_message(&ctx))
        });
        self.leave();
        let promise = started.map_err(|m| self.failure(m, job.deadline))?;
        let mut invocation = Invocation {
            promise,
            context,
            id,
            tags: job.tags,
            deadline: job.deadline,
            rt: self.clone(),
        };
        let step = invocation.outcome();
        Ok((invocation, step))
    }

    fn enter(&self, id: u64, tags: &Tags, svc: bool, deadline: Instant) {
        self.shared.current.set(id);
        self.shared.svc.set(svc);
        *self.shared.tags.borrow_mut() = tags.clone();
        self.deadline.set(Some(deadline));
    }

    fn leave(&self) {
        self.deadline.set(None);
        self.shared.current.set(0);
    }
}

/// Fails unless `promise` settled successfully (module evaluation).
fn settled(promise: &Promise<'_>) -> rquickjs::Result<()> {
    match promise.state() {
        PromiseState::Resolved => Ok(()),
        PromiseState::Rejected => promise.result::<Value>().map_or(Ok(()), |r| r.map(|_| ())),
        PromiseState::Pending => Err(rquickjs::Error::Unknown),
    }
}

/// `req.args` (as the prelude's `input`) and `req.configuration`, built as engine values.
fn to_js<'js>(ctx: &Ctx<'js>, input: &Input) -> rquickjs::Result<(Object<'js>, Object<'js>)> {
    let args = Object::new(ctx.clone())?;
    match &input.args.body {
        Body::Json(text) => {
            args.set("body", text.as_str())?;
            args.set("bodyKind", "json")?;
        }
        Body::Text(text) => {
            args.set("body", text.as_str())?;
            args.set("bodyKind", "text")?;
        }
        Body::Form(pairs) => {
            let list = Array::new(ctx.clone())?;
            for (i, (k, v)) in pairs.iter().enumerate() {
                let pair = Array::new(ctx.clone())?;
                pair.set(0, k.as_str())?;
                pair.set(1, v.as_str())?;
                list.set(i, pair)?;
            }
            args.set("body", list)?;
            args.set("bodyKind", "form")?;
        }
    }
    let headers = Object::new(ctx.clone())?;
    for (name, value) in &input.args.headers {
        headers.set(name.as_str(), value.as_str())?;
    }
    args.set("headers", headers)?;
    if let Some(m) = &input.args.method {
        args.set("method", m.as_str())?;
    }
    if let Some(p) = &input.args.path {
        args.set("path", p.as_str())?;
    }
    if let Some(q) = &input.args.query {
        args.set("query", q.as_str())?;
    }
    if let Some(s) = input.args.status {
        args.set("status", s)?;
    }
    let configuration = Object::new(ctx.clone())?;
    for (k, v) in &input.configuration {
        configuration.set(k.as_str(), v.as_str())?;
    }
    Ok((args, configuration))
}

/// `(name, value)` pairs from the prelude's array of pairs.
fn pairs(value: Option<Array<'_>>) -> rquickjs::Result<Option<Vec<(String, String)>>> {
    value
        .map(|list| {
            list.iter::<Array>()
                .map(|pair| {
                    let pair = pair?;
                    Ok((pair.get(0)?, pair.get(1)?))
                })
                .collect()
        })
        .transpose()
}

impl Invocation {
    /// Answers `req.svc` calls (by id) and runs the next segment.
    pub(crate) fn resume(&mut self, answers: Vec<(u64, Result<String, HostError>)>) -> Step {
        let rt = self.rt.clone();
        rt.enter(self.id, &self.tags, true, self.deadline);
        let resumed = self.context.with(|ctx| {
            let result: rquickjs::Result<()> = (|| {
                for (call, answer) in answers {
                    let Some((_, resolve)) = rt.shared.waiting.borrow_mut().remove(&call) else {
                        continue;
                    };
                    let resolve = resolve.restore(&ctx)?;
                    let text = match answer {
                        Ok(json) => format!(r#"{{"ok":{json}}}"#),
                        Err(e) => serde_json::json!({ "error": { "status": e.status, "message": e.message } })
                            .to_string(),
                    };
                    resolve.call::<_, ()>((text,))?;
                }
                drain(&ctx);
                Ok(())
            })();
            result.map_err(|_| exception_message(&ctx))
        });
        rt.leave();
        if let Err(message) = resumed {
            return Step::Done(Err(rt.failure(message, self.deadline)));
        }
        self.outcome()
    }

    /// Where the invocation stands now.
    fn outcome(&mut self) -> Step {
        let rt = self.rt.clone();
        let made: Vec<PendingCall> = std::mem::take(&mut *rt.shared.made.borrow_mut());
        let deadline = self.deadline;
        let state = self.context.with(|ctx| {
            let promise = match self.promise.clone().restore(&ctx) {
                Ok(p) => p,
                Err(e) => return Err(e.to_string()),
            };
            match promise.state() {
                PromiseState::Pending => Ok(None),
                PromiseState::Rejected => {
                    let _ = promise.result::<Value>();
                    Err(exception_message(&ctx))
                }
                PromiseState::Resolved => read_outcome(&promise).map(Some).map_err(|e| {
                    let caught = exception_message(&ctx);
                    if caught == "out of memory" {
                        e
                    } else {
                        caught
                    }
                }),
            }
        });
        match state {
            Ok(Some(done)) => Step::Done(done.map_err(|(message, discard)| {
                if discard {
                    rt.broken.set(true);
                }
                if message.contains("out of memory") {
                    rt.broken.set(true);
                    TransformError::OutOfMemory
                } else {
                    TransformError::Crashed(message)
                }
            })),
            Ok(None) if !made.is_empty() => Step::Waiting(made),
            Ok(None) => {
                let still_waiting = rt
                    .shared
                    .waiting
                    .borrow()
                    .values()
                    .any(|(inv, _)| *inv == self.id);
                if still_waiting {
                    Step::Waiting(Vec::new())
                } else {
                    Step::Done(Err(TransformError::Crashed(
                        "the transform awaits a promise that can never settle (transforms have no timers)".into(),
                    )))
                }
            }
            Err(message) => Step::Done(Err(rt.failure(message, deadline))),
        }
    }
}

/// The outcome object the prelude's `run` resolved with; `Err((message, discard))` for a
/// failed transform.
fn read_outcome(promise: &Promise<'_>) -> Result<Result<Outcome, (String, bool)>, String> {
    let value: Object = match promise.result::<Object>() {
        Some(Ok(o)) => o,
        _ => return Err("unexpected transform result".into()),
    };
    let read = || -> rquickjs::Result<Result<Outcome, (String, bool)>> {
        let kind: String = value.get("kind")?;
        Ok(match kind.as_str() {
            "ok" => Ok(Outcome::Ok {
                body: value.get("body")?,
                headers: pairs(value.get("headers")?)?,
            }),
            "http" => Ok(Outcome::Http {
                status: value.get("status")?,
                name: value.get("name")?,
                message: value.get("message")?,
            }),
            "custom" => {
                let status: f64 = value.get::<_, Option<f64>>("status")?.unwrap_or(f64::NAN);
                let status =
                    if status.is_finite() && status.fract() == 0.0 && (0.0..=1e6).contains(&status)
                    {
                        status as u32
                    } else {
                        0
                    };
                Ok(Outcome::Custom {
                    status,
                    headers: pairs(value.get("headers")?)?,
                    body: value.get("body")?,
                })
            }
            _ => Err((
                value.get("message")?,
                value.get::<_, Option<bool>>("discard")?.unwrap_or(false),
            )),
        })
    };
    read().map_err(|e| e.to_string())
}

impl Drop for Invocation {
    fn drop(&mut self) {
        // Calls this invocation still awaits will never be answered: forget their promises.
        self.rt
            .shared
            .waiting
            .borrow_mut()
            .retain(|_, (inv, _)| *inv != self.id);
    }
}
