//! The runtime: QuickJS with a counting allocator, limits and an interrupt deadline, and the
//! warm contexts of the proxies it served (each loaded with the prelude and one program).

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    rc::Rc,
    time::Instant,
};

use rquickjs::{
    context::intrinsic, promise::PromiseState, Context, Ctx, Function, Module, Object, Persistent,
    Promise, Runtime, Value,
};

use crate::{
    memory::{Accounting, CountingAllocator},
    message::{Input, Outcome, TransformError},
    natives::{natives, LogSink, PendingCall, Shared, Tags},
    program::Program,
};

/// Calls a warm context serves before it is rebuilt (bounds slow growth inside it).
const CALLS_PER_CONTEXT: u32 = 10_000;

/// Limits of a runtime.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// What one invocation may allocate.
    pub(crate) memory: usize,
    /// What the warm contexts of the runtime may hold between invocations; above it they are
    /// dropped (and rebuilt on their next calls), so retained memory stays bounded.
    pub(crate) retained: usize,
    pub(crate) stack: usize,
    pub(crate) max_contexts: usize,
    /// The second name of `req.svc`, if any ([`crate::EngineConfig::client_alias`]).
    pub(crate) client_alias: Option<String>,
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

pub(super) type ContextKey = (String, [u8; 32]);

/// What the prelude hands the host in each context (captured before tenant code ran there).
#[derive(Clone)]
pub(super) struct Exports {
    pub(super) classify: Persistent<Function<'static>>,
    pub(super) svc: Persistent<Object<'static>>,
    pub(super) parse_body: Persistent<Function<'static>>,
    pub(super) accessors: Persistent<Function<'static>>,
    pub(super) texts: Persistent<rquickjs::Symbol<'static>>,
    pub(super) accessor_cache: super::input::AccessorCache,
    pub(super) encode_form: Persistent<Function<'static>>,
    pub(super) stringify: Persistent<Function<'static>>,
    pub(super) text: Persistent<Function<'static>>,
    pub(super) object_proto: Persistent<Object<'static>>,
    pub(super) array_proto: Persistent<Object<'static>>,
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
            accessors: function("accessors")?,
            texts: Persistent::save(ctx, exports.get::<_, rquickjs::Symbol>("texts")?),
            accessor_cache: Default::default(),
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
    /// Set once an invocation put a value into this context that its callers must never get
    /// back (see `crate::taint`); the context has then left the warm set.
    tainted: Rc<Cell<bool>>,
}

/// A warm context as one invocation holds it.
pub(super) struct Checkout {
    pub(super) context: Context,
    pub(super) exports: Exports,
    pub(super) handler: Persistent<Value<'static>>,
    /// Which warm context it is.
    pub(super) key: ContextKey,
    /// Shared with the warm entry and every invocation running in the context.
    pub(super) tainted: Rc<Cell<bool>>,
}

/// A QuickJS runtime and its warm contexts. Field order is drop order: contexts before the
/// runtime.
pub(crate) struct JsRuntime {
    contexts: RefCell<HashMap<ContextKey, Warm>>,
    pub(super) shared: Rc<Shared>,
    deadline: Rc<Cell<Option<Instant>>>,
    accounting: Accounting,
    pub(super) next_invocation: Cell<u64>,
    pub(super) broken: Cell<bool>,
    pub(super) limits: Limits,
    runtime: Runtime,
}

pub(super) fn engine_error(e: impl std::fmt::Display) -> TransformError {
    TransformError::Engine(e.to_string())
}

/// The message of the exception pending in `ctx`, without a stack trace.
pub(super) fn exception_message(ctx: &Ctx<'_>) -> String {
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
pub(super) fn drain(ctx: &Ctx<'_>) {
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
    pub(super) fn set_memory_limit(&self) {
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
    pub(super) fn warm(&self, job: &Job<'_>) -> Result<Checkout, TransformError> {
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
                    tainted: Rc::new(Cell::new(false)),
                },
            );
        }
        let warm = contexts
            .get_mut(&key)
            .ok_or_else(|| TransformError::Engine("context vanished".into()))?;
        warm.calls += 1;
        Ok(Checkout {
            context: warm.context.clone(),
            exports: warm.exports.clone(),
            handler: warm.handler.clone(),
            tainted: warm.tainted.clone(),
            key,
        })
    }

    /// Takes the context `key` out of the warm set if it is still the one flagged by
    /// `tainted` (its invocations still running keep it until they end); the proxy's next
    /// call builds a fresh one.
    pub(super) fn discard(&self, key: &ContextKey, tainted: &Rc<Cell<bool>>) {
        let mut contexts = self.contexts.borrow_mut();
        if contexts
            .get(key)
            .is_some_and(|w| Rc::ptr_eq(&w.tainted, tainted))
        {
            contexts.remove(key);
            // The heap changes when the context goes: calibrate again at the next invocation.
            self.accounting.recalibrate();
        }
    }

    /// Maps a failure message to an error, marking the runtime broken when a limit was hit.
    pub(super) fn failure(&self, message: String, deadline: Instant) -> TransformError {
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

    pub(super) fn enter(&self, id: u64, tags: &Tags, svc: bool, deadline: Instant) {
        self.shared.current.set(id);
        self.shared.svc.set(svc);
        *self.shared.tags.borrow_mut() = tags.clone();
        self.deadline.set(Some(deadline));
    }

    pub(super) fn leave(&self) {
        self.deadline.set(None);
        self.shared.current.set(0);
    }
}

/// Fails unless `promise` settled successfully (module evaluation).
pub(super) fn settled(promise: &Promise<'_>) -> rquickjs::Result<()> {
    match promise.state() {
        PromiseState::Resolved => Ok(()),
        PromiseState::Rejected => promise.result::<Value>().map_or(Ok(()), |r| r.map(|_| ())),
        PromiseState::Pending => Err(rquickjs::Error::Unknown),
    }
}
