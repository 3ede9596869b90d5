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
    json::Protos,
    memory::{Accounting, CountingAllocator},
    message::{Body, HostError, Input, Outcome, TransformError},
    natives::{natives, LogSink, PendingCall, Shared, Tags},
    outcome::{self, Encoding, Failed, Helpers},
    program::Program,
};

/// Calls a warm context serves before it is rebuilt (bounds slow growth inside it).
const CALLS_PER_CONTEXT: u32 = 10_000;

/// Limits of a runtime.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// What one invocation may allocate.
    pub(crate) memory: usize,
    /// What the warm contexts of the runtime may hold between invocations; above it they are
    /// dropped (and rebuilt on their next calls), so retained memory stays bounded.
    pub(crate) retained: usize,
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

/// What the prelude hands the host in each context (captured before tenant code ran there).
#[derive(Clone)]
struct Exports {
    classify: Persistent<Function<'static>>,
    svc: Persistent<Object<'static>>,
    parse_body: Persistent<Function<'static>>,
    encode_form: Persistent<Function<'static>>,
    stringify: Persistent<Function<'static>>,
    text: Persistent<Function<'static>>,
    object_proto: Persistent<Object<'static>>,
    array_proto: Persistent<Object<'static>>,
}

impl Exports {
    fn save<'js>(ctx: &Ctx<'js>, exports: &Object<'js>) -> rquickjs::Result<Self> {
        let function = |name: &str| -> rquickjs::Result<Persistent<Function<'static>>> {
            Ok(Persistent::save(ctx, exports.get::<_, Function>(name)?))
        };
        let object = |name: &str| -> rquickjs::Result<Persistent<Object<'static>>> {
            Ok(Persistent::save(ctx, exports.get::<_, Object>(name)?))
        };
        Ok(Self {
            classify: function("classify")?,
            svc: object("svc")?,
            parse_body: function("parseBody")?,
            encode_form: function("encodeForm")?,
            stringify: function("stringify")?,
            text: function("text")?,
            object_proto: object("objectProto")?,
            array_proto: object("arrayProto")?,
        })
    }
}

struct Warm {
    // Persistent values must be dropped before their context and runtime.
    exports: Exports,
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
    accounting: Accounting,
    next_invocation: Cell<u64>,
    broken: Cell<bool>,
    limits: Limits,
    runtime: Runtime,
}

/// What calling the handler gave.
enum Called {
    /// A promise (an `async` handler): settled, or awaiting `req.svc`.
    Promise(Persistent<Promise<'static>>),
    /// A value (a plain function).
    Returned(Persistent<Value<'static>>),
    /// What it threw before returning.
    Threw(Persistent<Value<'static>>),
}

/// An invocation in progress. Field order is drop order: its JavaScript values before the
/// runtime they live in.
pub(crate) struct Invocation {
    state: Called,
    exports: Exports,
    context: Context,
    /// The message's content type when the transform returns no headers.
    content_type: Option<String>,
    /// Bound on an encoded body (the per-invocation memory limit).
    memory: usize,
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
        let (allocator, held) = CountingAllocator::new();
        let runtime = Runtime::new_with_alloc(allocator).map_err(engine_error)?;
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
            accounting: Accounting::new(held),
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

    /// Sets the memory limit of the next invocation: what the runtime holds plus the
    /// allowance. When the warm contexts hold more than the retained limit, they are dropped
    /// first (their proxies' next calls rebuild them); a runtime still above it after that is
    /// marked broken, to be replaced once its invocations end.
    fn set_memory_limit(&self) {
        let measure =
            || usize::try_from(self.runtime.memory_usage().malloc_size.max(0)).unwrap_or(0);
        let mut held = self.accounting.estimate(measure);
        if held > self.limits.retained {
            self.contexts.borrow_mut().clear();
            self.runtime.run_gc();
            self.accounting.recalibrate();
            held = self.accounting.estimate(measure);
            if held > self.limits.retained {
                self.broken.set(true);
            }
        }
        self.runtime
            .set_memory_limit(held.saturating_add(self.limits.memory));
    }

    /// The warm context for `job`, built when missing.
    fn warm(
        &self,
        job: &Job<'_>,
    ) -> Result<(Context, Exports, Persistent<Value<'static>>), TransformError> {
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
            // A new context changes the heap: calibrate again at the next invocation.
            self.accounting.recalibrate();
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
                    let exports: Object = install.call((natives(&ctx, &self.shared)?,))?;
                    let exports = Exports::save(&ctx, &exports)?;
                    let user = unsafe { Module::load(ctx.clone(), job.program.bytecode())? };
                    let (user, ready) = user.eval()?;
                    drain(&ctx);
                    settled(&ready)?;
                    let handler: Value = user.get("default")?;
                    Ok((exports, Persistent::save(&ctx, handler)))
                })();
                result.map_err(|_| exception_message(&ctx))
            });
            self.deadline.set(None);
            let (exports, handler) = loaded.map_err(|m| self.failure(m, job.deadline))?;
            contexts.insert(
                key.clone(),
                Warm {
                    exports,
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
        Ok((
            warm.context.clone(),
            warm.exports.clone(),
            warm.handler.clone(),
        ))
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
        self.set_memory_limit();
        let (context, exports, handler) = self.warm(&job)?;
        let id = self.next_invocation.get();
        self.next_invocation.set(id + 1);
        self.enter(id, &job.tags, job.svc, job.deadline);
        self.shared.logged.set(0);
        let started = context.with(|ctx| {
            let result: rquickjs::Result<Option<Called>> = (|| {
                let handler = handler.restore(&ctx)?;
                let Some(handler) = handler.as_function() else {
                    return Ok(None);
                };
                let parse_body = exports.parse_body.clone().restore(&ctx)?;
                let (args, configuration) = to_js(&ctx, &job.input, &parse_body)?;
                let req = Object::new(ctx.clone())?;
                req.set("args", args)?;
                req.set("configuration", configuration)?;
                if job.svc {
                    req.set("svc", exports.svc.clone().restore(&ctx)?)?;
                }
                let called = match handler.call::<_, Value>((req,)) {
                    Ok(value) => match value.as_promise() {
                        Some(promise) => Called::Promise(Persistent::save(&ctx, promise.clone())),
                        None => Called::Returned(Persistent::save(&ctx, value)),
                    },
                    Err(rquickjs::Error::Exception) => {
                        Called::Threw(Persistent::save(&ctx, ctx.catch()))
                    }
                    Err(e) => return Err(e),
                };
                drain(&ctx);
                Ok(Some(called))
            })();
            result.map_err(|_| exception_message(&ctx))
        });
        self.leave();
        let state = started
            .map_err(|m| self.failure(m, job.deadline))?
            .ok_or_else(|| {
                TransformError::Crashed(
                    "TypeError: the transform must export a function: module.exports = async function (req) { … }".into(),
                )
            })?;
        let content_type = job
            .input
            .args
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| value.clone());
        let mut invocation = Invocation {
            state,
            context,
            exports,
            content_type,
            memory: self.limits.memory,
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

/// `req.args` and `req.configuration`, built as engine values: a JSON body parsed by the
/// engine (`parseBody`), a form body as an object (repeated names as arrays).
fn to_js<'js>(
    ctx: &Ctx<'js>,
    input: &Input,
    parse_body: &Function<'js>,
) -> rquickjs::Result<(Object<'js>, Object<'js>)> {
    let args = Object::new(ctx.clone())?;
    match &input.args.body {
        Body::Json(text) => {
            let parsed: Value = parse_body.call((text.as_str(),))?;
            args.set("body", parsed)?;
        }
        Body::Text(text) => args.set("body", text.as_str())?,
        Body::Form(pairs) => {
            let form = Object::new(ctx.clone())?;
            for (k, v) in pairs {
                match form.get::<_, Value>(k.as_str())? {
                    existing if existing.is_undefined() => form.set(k.as_str(), v.as_str())?,
                    existing => {
                        let list = match existing.as_array() {
                            Some(list) => list.clone(),
                            None => {
                                let list = Array::new(ctx.clone())?;
                                list.set(0, existing)?;
                                form.set(k.as_str(), list.clone())?;
                                list
                            }
                        };
                        list.set(list.len(), v.as_str())?;
                    }
                }
            }
            args.set("body", form)?;
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
        // Reading may run JavaScript (getters, the form encoder): under the deadline, without
        // req.svc.
        rt.enter(self.id, &self.tags, false, deadline);
        let state = self.context.with(|ctx| {
            // What the handler settled with: `Ok(value)` returned, `Err(value)` thrown.
            let settled: Result<Value, Value> = match &self.state {
                Called::Returned(v) => match v.clone().restore(&ctx) {
                    Ok(v) => Ok(v),
                    Err(e) => return Err(e.to_string()),
                },
                Called::Threw(v) => match v.clone().restore(&ctx) {
                    Ok(v) => Err(v),
                    Err(e) => return Err(e.to_string()),
                },
                Called::Promise(p) => {
                    let promise = match p.clone().restore(&ctx) {
                        Ok(p) => p,
                        Err(e) => return Err(e.to_string()),
                    };
                    match promise.state() {
                        PromiseState::Pending => return Ok(None),
                        PromiseState::Resolved => match promise.result::<Value>() {
                            Some(Ok(v)) => Ok(v),
                            _ => return Err(exception_message(&ctx)),
                        },
                        PromiseState::Rejected => {
                            let _ = promise.result::<Value>();
                            Err(ctx.catch())
                        }
                    }
                }
            };
            // Past the deadline nothing more runs (the interrupt would stop it anyway).
            if Instant::now() >= deadline {
                return Ok(Some(Err(TransformError::TimedOut)));
            }
            let read = (|| -> Result<Outcome, Failed> {
                let restore = |f: &Persistent<Function<'static>>| f.clone().restore(&ctx);
                let helpers = Helpers {
                    encode_form: restore(&self.exports.encode_form)?,
                    stringify: restore(&self.exports.stringify)?,
                    text: restore(&self.exports.text)?,
                    protos: Protos {
                        object: self.exports.object_proto.clone().restore(&ctx)?,
                        array: self.exports.array_proto.clone().restore(&ctx)?,
                    },
                };
                match settled {
                    Ok(value) => {
                        let encoding = Encoding {
                            content_type: self.content_type.as_deref(),
                            limit: self.memory,
                            deadline,
                        };
                        outcome::returned(&ctx, &value, &helpers, &encoding)
                    }
                    Err(thrown) => {
                        let classify = restore(&self.exports.classify)?;
                        let classified: Object = classify.call((thrown,))?;
                        outcome::thrown(&classified)
                    }
                }
            })();
            match read {
                Ok(outcome) => Ok(Some(Ok(outcome))),
                Err(Failed::Threw { message, discard }) => {
                    if discard {
                        rt.broken.set(true);
                    }
                    if message.contains("interrupted") || message.contains("out of memory") {
                        return Err(message);
                    }
                    Ok(Some(Err(TransformError::Crashed(message))))
                }
                Err(Failed::Limit(e)) => Ok(Some(Err(e))),
                Err(Failed::Exception) => Err(exception_message(&ctx)),
            }
        });
        rt.leave();
        match state {
            Ok(Some(done)) => Step::Done(done),
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
