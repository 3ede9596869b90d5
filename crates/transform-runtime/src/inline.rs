//! Inline execution: each thread that runs transforms owns one QuickJS runtime (like an nginx
//! worker owns its njs VM) and runs the transform on the spot. `req.svc` calls are futures
//! awaited on the same thread; while one transform waits for the vault, the thread goes on
//! serving, and other transforms may run on the same runtime (see `runtime.rs`). A runtime that
//! hit a limit is replaced for new invocations and freed when the last one using it ends.

use std::{cell::RefCell, rc::Rc, time::Instant};

use crate::{
    host::{answer, HostFn, Inner, Run},
    message::{Outcome, TransformError},
    natives::{LogSink, Tags},
    runtime::{Job, JsRuntime, Step},
};

thread_local! {
    static RUNTIME: RefCell<Option<Rc<JsRuntime>>> = const { RefCell::new(None) };
}

/// `console.log` of inline transforms: the server log, tagged.
fn log_sink() -> LogSink {
    Rc::new(|tags: &Tags, line: &str| {
        tracing::info!(target: "transform", tenant = %tags.tenant, proxy = %tags.proxy, "{line}");
    })
}

/// This thread's runtime, built on first use and after the previous one broke.
fn runtime(inner: &Inner) -> Result<Rc<JsRuntime>, TransformError> {
    RUNTIME.with(|slot| {
        let mut slot = slot.borrow_mut();
        match slot.as_ref() {
            Some(rt) if !rt.is_broken() => Ok(rt.clone()),
            _ => {
                let rt = JsRuntime::new(inner.config.limits(), log_sink())?;
                *slot = Some(rt.clone());
                Ok(rt)
            }
        }
    })
}

pub(crate) async fn run<H: HostFn>(
    inner: &Inner,
    run: Run<'_, H>,
) -> Result<Outcome, TransformError> {
    let Run {
        program,
        scope,
        tags,
        input,
        host,
        taint,
    } = run;
    let deadline = Instant::now() + inner.config.time_limit;
    let rt = runtime(inner)?;
    let job = Job {
        program,
        prelude: &inner.prelude,
        scope,
        tags,
        input,
        svc: host.is_some(),
        deadline,
    };
    let (mut invocation, mut step) = rt.start(job)?;
    loop {
        // Another invocation of the same proxy may have put a value into the shared context
        // that must not reach this one's caller either (invocations interleave on a runtime).
        if invocation.is_tainted() {
            taint.mark();
        }
        match step {
            Step::Done(result) => return result,
            Step::Waiting(calls) if calls.is_empty() => {
                return Err(TransformError::Engine(
                    "an invocation waits on nothing".into(),
                ))
            }
            Step::Waiting(calls) => {
                let answers = tokio::time::timeout_at(
                    tokio::time::Instant::from_std(deadline),
                    answer(host.as_ref(), calls),
                )
                .await
                .map_err(|_| TransformError::TimedOut)?;
                // Before the answers enter the context: it is not kept warm after this.
                if taint.is_marked() {
                    invocation.taint();
                }
                step = invocation.resume(answers);
            }
        }
    }
}
