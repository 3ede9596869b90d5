//! One sandbox process and the jobs queued in it.
//!
//! Several jobs may be queued in one process: each job writes its frames into the to-child
//! ring and joins the queue, and the process runs them one after another without sleeping in
//! between, so a busy serving thread's jobs stream through it with no wake-up each. The frames
//! coming back belong to the first job of the queue (the one running); the first job whose
//! caller still waits reads them (it *pumps*), answering on behalf of jobs whose callers went
//! away, and holding the running job to its time limit from the moment it started.
//!
//! * A job waiting behind others has not started: its time limit starts when it does.
//! * When the running job outlives its limit and the grace, or the process dies or misbehaves,
//!   the process is killed; the running job fails (a timeout, or an engine error) and every job
//!   behind it, which never started, is handed back to be queued elsewhere ([`Failure::Requeue`]).
//! * A job whose caller goes away while it waits is abandoned: it runs when its turn comes and
//!   its answer is dropped. One whose caller goes away while it runs has the process killed, as
//!   the only way to stop it. A process left with only abandoned jobs is killed too.

use std::{
    cell::{Cell, RefCell},
    collections::{HashSet, VecDeque},
    os::fd::OwnedFd,
    process::Stdio,
    rc::Rc,
    time::Instant,
};

use tokio::sync::Notify;

use super::{
    channel::{channel, died, Rx, Tx},
    child,
    protocol::{self, ToChild},
    shm,
    slots::Slot,
};
use crate::{config::SandboxCommand, host::Inner, message::TransformError, natives::Tags};

/// Why a job did not give its caller an outcome.
pub(super) enum Failure {
    /// The job never started: run it elsewhere (its clock has not started either).
    Requeue,
    /// It ran and failed.
    Failed(TransformError),
}

struct Queued {
    job: u64,
    tags: Tags,
    abandoned: bool,
}

/// The gateway's handle on one sandbox process (this thread's only).
pub(super) struct Sandbox {
    // Killed when dropped (`kill_on_drop`).
    child: RefCell<tokio::process::Child>,
    /// Writers take turns (first come, first served): the queue's order is the ring's.
    tx: tokio::sync::Mutex<Tx>,
    /// Only the pumping job reads (the lock is never contended; it says so).
    rx: tokio::sync::Mutex<Rx>,
    loaded: RefCell<HashSet<[u8; 32]>>,
    /// The only tenant whose transforms this process runs.
    pub(super) tenant: String,
    queue: RefCell<VecDeque<Queued>>,
    /// When the queue's first job started (as far as this side knows).
    front_since: Cell<Option<Instant>>,
    /// A job finished or was abandoned, or the process died.
    changed: Notify,
    dead: Cell<bool>,
    /// Jobs whose callers chose this process and have not left it ([`Assigned`]).
    assigned: Cell<usize>,
    /// How many of them may call `req.svc`: a job waiting for its calls' answers holds up
    /// every job behind it, so none is queued behind such a job.
    assigned_svc: Cell<usize>,
    /// Held while any job is assigned here: the tenant's share of this thread's processes.
    slot: RefCell<Option<Slot>>,
    /// The time limit plus the grace: how long the running job may take.
    budget: std::time::Duration,
}

impl Sandbox {
    fn new(
        child: tokio::process::Child,
        (tx, rx): (Tx, Rx),
        tenant: &str,
        budget: std::time::Duration,
    ) -> Self {
        Self {
            child: RefCell::new(child),
            tx: tokio::sync::Mutex::new(tx),
            rx: tokio::sync::Mutex::new(rx),
            loaded: RefCell::new(HashSet::new()),
            tenant: tenant.to_string(),
            queue: RefCell::new(VecDeque::new()),
            front_since: Cell::new(None),
            changed: Notify::new(),
            dead: Cell::new(false),
            assigned: Cell::new(0),
            assigned_svc: Cell::new(0),
            slot: RefCell::new(None),
            budget,
        }
    }

    /// Starts a process for `tenant` and hands it the limits and the prelude.
    pub(super) async fn spawn(
        inner: &Inner,
        command: &SandboxCommand,
        tenant: &str,
    ) -> Result<Rc<Self>, TransformError> {
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
        let process = cmd
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
        let socket = tokio::net::UnixStream::from_std(parent).map_err(died)?;
        let budget = inner.config.time_limit + inner.config.grace;
        let sandbox = Self::new(process, channel(region, socket), tenant, budget);
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
        Ok(Rc::new(sandbox))
    }

    /// Sends a frame outside any job (`Init`, and the answers to a job's calls).
    pub(super) async fn send(&self, message: &ToChild) -> Result<(), TransformError> {
        let frame = protocol::encode(message).map_err(died)?;
        self.tx
            .lock()
            .await
            .send(&frame, || self.dead.get(), self.budget)
            .await
    }

    /// Whether the process is gone (or going).
    pub(super) fn is_dead(&self) -> bool {
        self.dead.get()
    }

    /// Jobs assigned here now.
    pub(super) fn assigned(&self) -> usize {
        self.assigned.get()
    }

    /// Whether it holds a slot (some job is assigned here).
    pub(super) fn is_active(&self) -> bool {
        self.slot.borrow().is_some()
    }

    /// Whether another job may be queued here: it is alive and no job assigned here may wait
    /// for `req.svc` answers.
    pub(super) fn takes_more(&self) -> bool {
        !self.dead.get() && self.assigned_svc.get() == 0
    }

    /// Assigns a job here (one that may call `req.svc` when `svc`); `slot` when the process
    /// was idle.
    pub(super) fn assign(self: &Rc<Self>, slot: Option<Slot>, svc: bool) -> Assigned {
        if let Some(slot) = slot {
            *self.slot.borrow_mut() = Some(slot);
        }
        self.assigned.set(self.assigned.get() + 1);
        if svc {
            self.assigned_svc.set(self.assigned_svc.get() + 1);
        }
        Assigned {
            sandbox: self.clone(),
            svc,
        }
    }

    /// Kills the process: the running job stops, the others are handed back.
    pub(super) fn kill(&self) {
        if !self.dead.replace(true) {
            let _ = self.child.borrow_mut().start_kill();
            self.changed.notify_waiters();
        }
    }

    /// A job's caller leaves: the slot goes back when no job is assigned any more, and a
    /// process left with abandoned jobs only is killed (nobody would hold them to their time
    /// limits).
    fn release(&self, svc: bool) {
        if svc {
            self.assigned_svc
                .set(self.assigned_svc.get().saturating_sub(1));
        }
        let left = self.assigned.get().saturating_sub(1);
        self.assigned.set(left);
        if left == 0 {
            self.slot.borrow_mut().take();
            if !self.queue.borrow().is_empty() {
                self.kill();
            }
        }
        self.changed.notify_waiters();
    }
}

/// A job's claim on a sandbox, from choosing it until its caller is done with it.
pub(super) struct Assigned {
    sandbox: Rc<Sandbox>,
    svc: bool,
}

impl std::ops::Deref for Assigned {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl Drop for Assigned {
    fn drop(&mut self) {
        self.sandbox.release(self.svc);
    }
}

#[path = "sandbox_jobs.rs"]
mod jobs;
