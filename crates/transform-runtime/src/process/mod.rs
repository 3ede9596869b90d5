//! Process isolation: transforms run in sandbox processes that hold no key material (started
//! with an empty environment, in `/`, with only their socket) and may not open files or sockets
//! (seccomp, rlimits; see `lockdown.rs`). Each thread that runs transforms keeps its own small
//! pool (`pool.rs`), so a request and its sandbox stay with one serving thread, and a busy
//! thread's jobs stream through one awake process (`sandbox.rs`).
//!
//! * A process serves **one tenant** for its whole life: a transform that subverted the engine
//!   of its process finds there only its own tenant's later requests, never another's. When
//!   the pool is full, an idle process of another tenant is stopped to make room.
//! * Processes are shared fairly between tenants (`slots.rs`): one tenant holds at most all but
//!   one of a thread's processes, and a freed one goes to the waiting tenant holding the
//!   fewest. The time limit runs from the job's start, never from when it began waiting; a job
//!   that waits longer than the queue timeout for a process fails with
//!   [`TransformError::Busy`] (a 503 that does not quarantine the proxy).
//! * A process that outlives a transform's time limit plus the grace is killed, which ends
//!   whatever CPU that invocation burns; one that dies takes only its running invocation down
//!   (a 500). The jobs queued behind it had not started: they are queued again elsewhere, their
//!   clocks still not started, and the pool starts another process on demand.
//! * What a process says is never trusted beyond its job: its frames are size-checked and
//!   decoded by serde, its `req.svc` calls are answered as the proxy whose job it runs, and its
//!   log lines are tagged by the parent.

mod channel;
mod child;
mod child_channel;
mod idle;
mod lockdown;
mod pool;
pub(crate) mod protocol;
mod sandbox;
mod shm;
mod slots;

use std::{cell::Cell, rc::Rc};

use channel::died;
pub use child::sandbox_main;
use pool::Pool;
use protocol::ToChild;
use sandbox::Failure;

use crate::{
    host::{HostFn, Inner, Run},
    message::{Outcome, TransformError},
};

/// How many times a job is queued again after the process it waited in died, before it fails.
const MAX_REQUEUES: usize = 3;

thread_local! {
    static POOL: std::cell::RefCell<Option<Rc<Pool>>> = const { std::cell::RefCell::new(None) };
    /// Jobs are numbered per thread: a job keeps its number (and its encoded frame) when it is
    /// queued again in another process.
    static NEXT_JOB: Cell<u64> = const { Cell::new(1) };
}

fn pool(inner: &Inner) -> Rc<Pool> {
    POOL.with(|slot| {
        slot.borrow_mut()
            .get_or_insert_with(|| Rc::new(Pool::new(inner.config.processes_per_thread)))
            .clone()
    })
}

fn next_job() -> u64 {
    NEXT_JOB.with(|n| {
        let job = n.get();
        n.set(job + 1);
        job
    })
}

pub(crate) async fn run<H: HostFn>(
    inner: &Inner,
    run: Run<'_, H>,
) -> Result<Outcome, TransformError> {
    let Some(command) = inner.config.sandbox.as_ref() else {
        return Err(TransformError::Engine("no sandbox command".into()));
    };
    let pool = pool(inner);
    let tags = run.tags.clone();
    let job = next_job();
    // The time limit travels with the job: the sandbox counts it from the job's start.
    let frame = protocol::encode(&ToChild::Run {
        job,
        program: *run.program.hash(),
        scope: run.scope.to_string(),
        tags: tags.clone(),
        input: Box::new(run.input),
        svc: run.host.is_some(),
        time_limit_ms: u64::try_from(inner.config.time_limit.as_millis()).unwrap_or(u64::MAX),
    })
    .map_err(died)?;
    let spin = idle::core_to_spare();
    let svc = run.host.is_some();
    for _ in 0..=MAX_REQUEUES {
        let sandbox = pool.choose(inner, command, (&tags.tenant, svc)).await?;
        let outcome = sandbox
            .job(
                run.program,
                (job, &frame),
                run.host.as_ref(),
                (&tags, run.taint, spin),
            )
            .await;
        match outcome {
            Ok(outcome) => return Ok(outcome),
            Err(Failure::Failed(e)) => return Err(e),
            Err(Failure::Requeue) => {}
        }
    }
    Err(died("the processes it was queued in kept dying"))
}
