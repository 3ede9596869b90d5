//! An invocation: calling the handler with `req`, resuming it with the answers to its
//! `req.svc` calls, and reading what it settled with into an [`Outcome`].

use std::{cell::Cell, rc::Rc, time::Instant};

use rquickjs::{
    promise::PromiseState, Atom, Context, Function, Object, Persistent, Promise, Value,
};

use super::{
    input::{to_js, Builders, LazyBody},
    js::{drain, exception_message, Checkout, ContextKey, Exports, Job, JsRuntime, Step},
};
use crate::{
    json::{LazyMemberView, LazyView, Protos},
    message::{Body, HostError, Input, Outcome, TransformError},
    natives::{PendingCall, Tags},
    outcome::{self, Encoding, Failed, Helpers},
};

/// What calling the handler gave.
enum Called {
    /// A promise (an `async` handler): settled, or awaiting `req.svc`.
    Promise(Persistent<Promise<'static>>),
    /// A value (a plain function).
    Returned(Persistent<Value<'static>>),
    /// What it threw before returning.
    Threw(Persistent<Value<'static>>),
}

/// What a handler settled with: `Ok(value)` returned, `Err(value)` thrown.
type Settled<'js> = Result<Value<'js>, Value<'js>>;

/// An invocation in progress. Field order is drop order: its JavaScript values before the
/// runtime they live in.
pub(crate) struct Invocation {
    state: Called,
    /// The JSON body given member by member, if it was.
    lazy: Option<LazyBody>,
    exports: Exports,
    context: Context,
    /// The message's content type when the transform returns no headers.
    content_type: Option<String>,
    /// Bound on an encoded body (the per-invocation memory limit).
    memory: usize,
    id: u64,
    tags: Tags,
    deadline: Instant,
    /// Its warm context's key and taint flag (shared with every invocation running in it).
    key: ContextKey,
    tainted: Rc<Cell<bool>>,
    rt: Rc<JsRuntime>,
}

impl JsRuntime {
    /// Starts `job`: its first segment.
    pub(crate) fn start(
        self: &Rc<Self>,
        mut job: Job<'_>,
    ) -> Result<(Invocation, Step), TransformError> {
        self.set_memory_limit();
        let Checkout {
            context,
            exports,
            handler,
            key,
            tainted,
        } = self.warm(&job)?;
        let id = self.next_invocation.get();
        self.next_invocation.set(id + 1);
        self.enter(id, &job.tags, job.svc, job.deadline);
        self.shared.logged.set(0);
        let body = std::mem::replace(&mut job.input.args.body, Body::Text(String::new()));
        let started = context.with(|ctx| {
            self.call_handler(&ctx, handler, &exports, &job, body)
                .map_err(|_| exception_message(&ctx))
        });
        self.leave();
        let (state, lazy) = started
            .map_err(|m| self.failure(m, job.deadline))?
            .ok_or_else(|| {
                TransformError::Crashed(
                    "TypeError: the transform must export a function: module.exports = async function (req) { … }".into(),
                )
            })?;
        let content_type = content_type(&job.input);
        let mut invocation = Invocation {
            state,
            lazy,
            context,
            exports,
            content_type,
            memory: self.limits.memory,
            id,
            tags: job.tags,
            deadline: job.deadline,
            key,
            tainted,
            rt: self.clone(),
        };
        let step = invocation.outcome();
        Ok((invocation, step))
    }

    /// Calls the handler with `req` built from `job` (its body taken as `body`): what it
    /// returned or threw, and the body left to parse lazily; `None` when the module exports
    /// no function.
    fn call_handler<'js>(
        &self,
        ctx: &rquickjs::Ctx<'js>,
        handler: Persistent<Value<'static>>,
        exports: &Exports,
        job: &Job<'_>,
        body: Body,
    ) -> rquickjs::Result<Option<(Called, Option<LazyBody>)>> {
        let handler = handler.restore(ctx)?;
        let Some(handler) = handler.as_function() else {
            return Ok(None);
        };
        let builders = Builders {
            parse_body: exports.parse_body.clone().restore(ctx)?,
            accessors: exports.accessors.clone().restore(ctx)?,
            texts: exports.texts.clone().restore(ctx)?,
            cache: exports.accessor_cache.clone(),
        };
        let built = to_js(ctx, &job.input, body, &builders)?;
        let req = Object::new(ctx.clone())?;
        req.set("args", built.args)?;
        req.set("configuration", built.configuration)?;
        if job.svc {
            let svc = exports.svc.clone().restore(ctx)?;
            if let Some(alias) = &self.limits.client_alias {
                req.set(alias.as_str(), svc.clone())?;
            }
            req.set("svc", svc)?;
        }
        let called = match handler.call::<_, Value>((req,)) {
            Ok(value) => match value.as_promise() {
                Some(promise) => Called::Promise(Persistent::save(ctx, promise.clone())),
                None => Called::Returned(Persistent::save(ctx, value)),
            },
            Err(rquickjs::Error::Exception) => Called::Threw(Persistent::save(ctx, ctx.catch())),
            Err(e) => return Err(e),
        };
        drain(ctx);
        Ok(Some((called, built.lazy)))
    }
}

impl Invocation {
    /// Marks the invocation's context as holding a value its callers must never get back
    /// (call it before resuming with that value): the context leaves the warm set at once, so
    /// no later call runs in it, and every invocation still running in it reports itself
    /// tainted ([`Invocation::is_tainted`]).
    pub(crate) fn taint(&self) {
        self.tainted.set(true);
        self.rt.discard(&self.key, &self.tainted);
    }

    /// Whether the invocation's context was tainted, by this invocation or by another one
    /// running in the same context: what it answers may then hold such a value.
    pub(crate) fn is_tainted(&self) -> bool {
        self.tainted.get()
    }

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
            let Some(settled) = self.settled(&ctx)? else {
                return Ok(None);
            };
            // Past the deadline nothing more runs (the interrupt would stop it anyway).
            if Instant::now() >= deadline {
                return Ok(Some(Err(TransformError::TimedOut)));
            }
            match self.read(&ctx, settled) {
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
            Ok(None) => self.waiting_or_stuck(),
            Err(message) => Step::Done(Err(rt.failure(message, deadline))),
        }
    }

    /// What the handler settled with: `Ok(value)` returned, `Err(value)` thrown; `None` while
    /// its promise is pending; `Err(message)` when the engine failed.
    fn settled<'js>(&self, ctx: &rquickjs::Ctx<'js>) -> Result<Option<Settled<'js>>, String> {
        let settled = match &self.state {
            Called::Returned(v) => Ok(v.clone().restore(ctx).map_err(|e| e.to_string())?),
            Called::Threw(v) => Err(v.clone().restore(ctx).map_err(|e| e.to_string())?),
            Called::Promise(p) => {
                let promise = p.clone().restore(ctx).map_err(|e| e.to_string())?;
                match promise.state() {
                    PromiseState::Pending => return Ok(None),
                    PromiseState::Resolved => match promise.result::<Value>() {
                        Some(Ok(v)) => Ok(v),
                        _ => return Err(exception_message(ctx)),
                    },
                    PromiseState::Rejected => {
                        let _ = promise.result::<Value>();
                        Err(ctx.catch())
                    }
                }
            }
        };
        Ok(Some(settled))
    }

    /// Reads what the handler settled with into an [`Outcome`]: a returned value through the
    /// prelude's encoders, a thrown one through its classifier.
    fn read<'js>(
        &self,
        ctx: &rquickjs::Ctx<'js>,
        settled: Settled<'js>,
    ) -> Result<Outcome, Failed> {
        let restore = |f: &Persistent<Function<'static>>| f.clone().restore(ctx);
        let helpers = Helpers {
            encode_form: restore(&self.exports.encode_form)?,
            stringify: restore(&self.exports.stringify)?,
            text: restore(&self.exports.text)?,
            protos: Protos {
                object: self.exports.object_proto.clone().restore(ctx)?,
                array: self.exports.array_proto.clone().restore(ctx)?,
            },
            lazy: match &self.lazy {
                Some(lazy) => Some(lazy_view(ctx, lazy)?),
                None => None,
            },
        };
        match settled {
            Ok(value) => {
                let encoding = Encoding {
                    content_type: self.content_type.as_deref(),
                    limit: self.memory,
                    deadline: self.deadline,
                };
                outcome::returned(ctx, &value, &helpers, &encoding)
            }
            Err(thrown) => {
                let classify = restore(&self.exports.classify)?;
                let classified: Object = classify.call((thrown,))?;
                outcome::thrown(&classified)
            }
        }
    }

    /// A handler pending with no call of its own made: still waiting for an answer to an
    /// earlier `req.svc` call, or awaiting what can never settle.
    fn waiting_or_stuck(&self) -> Step {
        let still_waiting = self
            .rt
            .shared
            .waiting
            .borrow()
            .values()
            .any(|(inv, _)| *inv == self.id);
        if still_waiting {
            Step::Waiting(Vec::new())
        } else {
            Step::Done(Err(TransformError::Crashed(
                "the transform awaits a promise that can never settle (transforms have no timers)"
                    .into(),
            )))
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

/// The message's `Content-Type`, if it has one.
fn content_type(input: &Input) -> Option<String> {
    input
        .args
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.clone())
}

/// The lazy body's values in `ctx`, for the encoder.
fn lazy_view<'js>(ctx: &rquickjs::Ctx<'js>, lazy: &LazyBody) -> rquickjs::Result<LazyView<'js>> {
    let members = lazy
        .members
        .iter()
        .map(|m| {
            Ok(LazyMemberView {
                atom: Atom::from_str(ctx.clone(), &m.key)?,
                key: m.key.clone(),
                raw: m.raw.clone(),
                canonical: m.canonical,
                getter: m.getter.clone().restore(ctx)?,
            })
        })
        .collect::<rquickjs::Result<Vec<_>>>()?;
    Ok(LazyView {
        object: lazy.object.clone().restore(ctx)?,
        texts: lazy.texts.clone().restore(ctx)?,
        text: lazy.text.clone(),
        members,
        untouched: super::descriptor::own_getter,
    })
}
