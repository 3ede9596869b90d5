//! Process isolation: transforms run in sandbox processes that hold no key material (started
//! with an empty environment, in `/`, with only their socket) and may not open files or sockets
//! (seccomp, rlimits; see `sandbox.rs`). Each thread that runs transforms keeps its own small
//! pool (at most [`crate::EngineConfig::processes_per_thread`]), so a request and its sandbox
//! stay with one serving core.
//!
//! * A process serves **one tenant** for its whole life: a transform that subverted the engine
//!   of its process finds there only its own tenant's later requests, never another's. When
//!   the pool is full, an idle process of another tenant is stopped to make room.
//! * Slots are shared fairly between tenants (`slots.rs`): one tenant holds at most all but one
//!   of a thread's processes, and a freed slot goes to the waiting tenant holding the fewest.
//!   The time limit runs from the job's start, never from when it began waiting; a job that
//!   waits longer than the queue timeout fails with [`TransformError::Busy`] (a 503 that does
//!   not quarantine the proxy).
//! * A process that outlives a transform's time limit plus the grace is killed, which ends
//!   whatever CPU that invocation burns; one that dies takes only its own invocation down (a
//!   500), and the pool starts another on demand.
//! * What a process says is never trusted beyond its job: its frames are size-checked and
//!   decoded by serde, its `req.svc` calls are answered as the proxy whose job it runs, and its
//!   log lines are tagged by the parent.

mod channel;
mod child;
mod child_channel;
pub(crate) mod protocol;
mod sandbox;
mod shm;
mod slots;

use std::{
    cell::RefCell, collections::HashSet, os::fd::OwnedFd, process::Stdio, rc::Rc, time::Instant,
};

use tokio::net::UnixStream;

use channel::Channel;
pub use child::sandbox_main;
use protocol::{FromChild, ToChild};

use crate::{
    config::SandboxCommand,
    host::{answer, HostFn, Inner, Run},
    message::{Outcome, TransformError},
    natives::Tags,
    program::Program,
    taint::Taint,
};

/// One sandbox process and the parent's end of its socket.
struct Sandbox {
    // Killed when dropped (`kill_on_drop`).
    child: tokio::process::Child,
    /// Frames through shared memory; the socket is only its doorbell.
    channel: Channel,
    loaded: HashSet<[u8; 32]>,
    next_job: u64,
    /// The only tenant whose transforms this process runs.
    tenant: String,
}

/// This thread's sandboxes.
struct Pool {
    idle: RefCell<Vec<Sandbox>>,
    slots: Rc<slots::Slots>,
}

thread_local! {
    static POOL: RefCell<Option<Rc<Pool>>> = const { RefCell::new(None) };
}

fn died(e: impl std::fmt::Display) -> TransformError {
    TransformError::Engine(format!("the transform process failed: {e}"))
}

impl Pool {
    /// An idle process of `tenant`, if any. Otherwise, when the pool holds `max` processes,
    /// stops an idle one of another tenant to make room (the caller holds a slot, so at most
    /// `max - 1` others are busy and one is idle).
    fn take(&self, tenant: &str, max: usize) -> Option<Sandbox> {
        let mut idle = self.idle.borrow_mut();
        if let Some(i) = idle.iter().rposition(|s| s.tenant == tenant) {
            return Some(idle.swap_remove(i));
        }
        let busy = self.slots.busy().saturating_sub(1);
        if busy + idle.len() >= max && !idle.is_empty() {
            // Dropping it kills it.
            drop(idle.remove(0));
        }
        None
    }
}

fn pool(inner: &Inner) -> Rc<Pool> {
    POOL.with(|slot| {
        slot.borrow_mut()
            .get_or_insert_with(|| {
                Rc::new(Pool {
                    idle: RefCell::new(Vec::new()),
                    slots: slots::Slots::new(inner.config.processes_per_thread),
                })
            })
            .clone()
    })
}

impl Sandbox {
    async fn spawn(
        inner: &Inner,
        command: &SandboxCommand,
        tenant: &str,
    ) -> Result<Self, TransformError> {
        let (parent, child_end) = std::os::unix::net::UnixStream::pair().map_err(died)?;
        parent.set_nonblocking(true).map_err(died)?;
        // The shared rings, handed to the sandbox as its standard output.
        let (region, memfd) = shm::Region::create().map_err(died)?;
        let mut cmd = tokio::process::Command::new(&command.program);
        cmd.args(&command.args);
        #[cfg(target_os = "linux")]
        if rustix::process::geteuid().is_root() {
            let (uid, gid) = inner.config.sandbox_user;
            cmd.arg(child::USER_ARG).arg(format!("{uid}:{gid}"));
        }
        let child = cmd
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(child_end)))
            .stdout(Stdio::from(memfd))
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                TransformError::Engine(format!(
                    "cannot start the transform sandbox {}: {e}",
                    command.program.display()
                ))
            })?;
        let mut sandbox = Self {
            child,
            channel: Channel::new(region, UnixStream::from_std(parent).map_err(died)?),
            loaded: HashSet::new(),
            next_job: 1,
            tenant: tenant.to_string(),
        };
        let limits = inner.config.limits();
        sandbox
            .send(&ToChild::Init {
                memory: limits.memory,
                retained: limits.retained,
                stack: limits.stack,
                max_contexts: limits.max_contexts,
                client_alias: limits.client_alias.clone(),
                prelude_hash: *inner.prelude.hash(),
                prelude: inner.prelude.bytecode().to_vec(),
            })
            .await?;
        Ok(sandbox)
    }

    async fn send(&mut self, message: &ToChild) -> Result<(), TransformError> {
        self.channel.send(message).await
    }

    async fn receive(&mut self) -> Result<FromChild, TransformError> {
        self.channel.receive().await
    }

    /// Runs one job to its end, answering `req.svc` calls and relaying log lines.
    async fn job<H: HostFn>(
        &mut self,
        program: &Program,
        run: ToChild,
        job: u64,
        host: Option<&H>,
        (tags, taint): (&Tags, &Taint),
    ) -> Result<Outcome, TransformError> {
        if !self.loaded.contains(program.hash()) {
            self.send(&ToChild::Load {
                hash: *program.hash(),
                bytecode: program.bytecode().to_vec(),
            })
            .await?;
            self.loaded.insert(*program.hash());
        }
        self.send(&run).await?;
        loop {
            match self.receive().await? {
                FromChild::Done { job: j, result } if j == job => return result,
                FromChild::Calls { job: j, calls } if j == job => {
                    let answers = answer(host, calls).await;
                    // A tainted job's context is discarded by the sandbox before the answers
                    // enter it.
                    let tainted = taint.is_marked();
                    self.send(&ToChild::Answers {
                        job,
                        answers,
                        tainted,
                    })
                    .await?;
                }
                FromChild::Log { line } => {
                    tracing::info!(target: "transform", tenant = %tags.tenant, proxy = %tags.proxy, "{line}");
                }
                _ => return Err(died("an unexpected frame")),
            }
        }
    }
}

pub(crate) async fn run<H: HostFn>(
    inner: &Inner,
    run: Run<'_, H>,
) -> Result<Outcome, TransformError> {
    let tags = &run.tags;
    let Some(command) = inner.config.sandbox.as_ref() else {
        return Err(TransformError::Engine("no sandbox command".into()));
    };
    let pool = pool(inner);
    // Waiting for a slot is not running: it has its own bound, and running out of it is not
    // the transform's fault (no quarantine).
    let slot = tokio::time::timeout(inner.config.queue_timeout, pool.slots.acquire(&tags.tenant))
        .await
        .map_err(|_| TransformError::Busy)?;
    let mut sandbox = match pool.take(&tags.tenant, inner.config.processes_per_thread) {
        Some(s) => s,
        None => Sandbox::spawn(inner, command, &tags.tenant).await?,
    };
    // The clock starts now: the job is handed to its process.
    let deadline = Instant::now() + inner.config.time_limit;
    let hard_stop = tokio::time::Instant::from_std(deadline + inner.config.grace);
    let job = sandbox.next_job;
    sandbox.next_job += 1;
    let time_left = inner.config.time_limit;
    let message = ToChild::Run {
        job,
        program: *run.program.hash(),
        scope: run.scope.to_string(),
        tags: tags.clone(),
        input: Box::new(run.input),
        svc: run.host.is_some(),
        time_limit_ms: u64::try_from(time_left.as_millis()).unwrap_or(u64::MAX),
    };
    let result = tokio::time::timeout_at(
        hard_stop,
        sandbox.job(
            run.program,
            message,
            job,
            run.host.as_ref(),
            (tags, run.taint),
        ),
    )
    .await;
    let result = match result {
        // Past the time limit and the grace: the process is killed (dropping it kills it), so
        // whatever the transform was doing stops using CPU now.
        Err(_) => {
            let _ = sandbox.child.start_kill();
            Err(TransformError::TimedOut)
        }
        Ok(Err(e @ TransformError::Engine(_))) => {
            let _ = sandbox.child.start_kill();
            Err(e)
        }
        Ok(result) => {
            pool.idle.borrow_mut().push(sandbox);
            result
        }
    };
    drop(slot);
    result
}
