//! Running jobs in a [`Sandbox`]: queueing a job's frames, waiting for its turn, and pumping
//! the frames that come back (answering `req.svc` calls, logging, holding the running job to
//! its time limit) until its outcome; and what happens when a caller goes away meanwhile.

use std::time::Instant;

use super::{Failure, Queued, Sandbox};
use crate::{
    host::{answer, HostFn},
    message::{HostError, Outcome, TransformError},
    natives::Tags,
    process::{
        channel::{died, Tx},
        protocol::{self, FromChild, ToChild},
    },
    program::Program,
    taint::Taint,
};

impl Sandbox {
    /// Runs `job` (the encoded `Run` frame `run`, numbered `job`) here, after the jobs queued
    /// before it, answering its `req.svc` calls with `host`.
    pub(in crate::process) async fn job<H: HostFn>(
        &self,
        program: &Program,
        (job, run): (u64, &[u8]),
        host: Option<&H>,
        (tags, taint, spin): (&Tags, &Taint, bool),
    ) -> Result<Outcome, Failure> {
        self.enqueue(program, job, run, tags, spin).await?;
        let mut watch = Watch {
            sandbox: self,
            job,
            done: false,
        };
        let outcome = self.turn_and_pump(job, host, taint).await;
        watch.done = true;
        outcome
    }

    /// Writes the job's frames (its program first, if this process lacks it) and queues it.
    async fn enqueue(
        &self,
        program: &Program,
        job: u64,
        run: &[u8],
        tags: &Tags,
        spin: bool,
    ) -> Result<(), Failure> {
        let mut tx = self.tx.lock().await;
        if self.dead.get() {
            return Err(Failure::Requeue);
        }
        let mut frames = Vec::with_capacity(run.len());
        if !self.loaded.borrow().contains(program.hash()) {
            let load = ToChild::Load {
                hash: *program.hash(),
                bytecode: program.bytecode().to_vec(),
            };
            frames = protocol::encode(&load).map_err(|e| Failure::Failed(died(e)))?;
        }
        frames.extend_from_slice(run);
        tx.allow_spin(spin);
        // A frame too large for the ring is streamed: dropped half-way, it would leave the
        // process reading a partial frame, so the process goes with it.
        let mut partial = Partial {
            sandbox: self,
            armed: !Tx::fits(&frames),
        };
        let sent = tx.send(&frames, || self.dead.get(), self.budget).await;
        partial.armed = false;
        if sent.is_err() {
            self.kill();
            return Err(Failure::Requeue);
        }
        self.loaded.borrow_mut().insert(*program.hash());
        let mut queue = self.queue.borrow_mut();
        if queue.is_empty() {
            // It runs at once: its time starts now.
            self.front_since.set(Some(Instant::now()));
        }
        queue.push_back(Queued {
            job,
            tags: tags.clone(),
            abandoned: false,
        });
        Ok(())
    }

    /// Waits until this job is the first live one, then reads the process's frames until its
    /// own `Done`.
    async fn turn_and_pump<H: HostFn>(
        &self,
        job: u64,
        host: Option<&H>,
        taint: &Taint,
    ) -> Result<Outcome, Failure> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.dead.get() {
                // A job at the front may have started: only the ones behind it never did.
                let front = self.queue.borrow().front().map(|q| q.job);
                return Err(if front == Some(job) {
                    Failure::Failed(died("it was stopped"))
                } else {
                    Failure::Requeue
                });
            }
            let first_live = self
                .queue
                .borrow()
                .iter()
                .find(|q| !q.abandoned)
                .map(|q| q.job);
            if first_live == Some(job) {
                return self.pump(job, host, taint).await;
            }
            notified.await;
        }
    }

    /// Reads frames until `me`'s `Done`: those of abandoned jobs ahead of it are answered
    /// and dropped. Holds the running job to [`Sandbox::budget`].
    async fn pump<H: HostFn>(
        &self,
        me: u64,
        host: Option<&H>,
        taint: &Taint,
    ) -> Result<Outcome, Failure> {
        loop {
            let Some(front) = self.queue.borrow().front().map(|q| q.job) else {
                return Err(Failure::Failed(died("its queue is empty")));
            };
            let since = self.front_since.get().unwrap_or_else(|| {
                let now = Instant::now();
                self.front_since.set(Some(now));
                now
            });
            let deadline = tokio::time::Instant::from_std(since + self.budget);
            let mut rx = self.rx.lock().await;
            let frame = tokio::time::timeout_at(deadline, rx.receive()).await;
            drop(rx);
            let fail = |e: TransformError| {
                self.kill();
                Err(if front == me {
                    Failure::Failed(e)
                } else {
                    Failure::Requeue
                })
            };
            let frame = match frame {
                // Past the time limit and the grace: the process is killed, so whatever the
                // transform was doing stops using CPU now.
                Err(_) => return fail(TransformError::TimedOut),
                Ok(Err(e)) => return fail(e),
                Ok(Ok(frame)) => frame,
            };
            match frame {
                FromChild::Done { job, result } if job == front => {
                    self.queue.borrow_mut().pop_front();
                    self.front_since.set(Some(Instant::now()));
                    if job == me {
                        return match result {
                            Err(e @ TransformError::Engine(_)) => fail(e),
                            other => other.map_err(Failure::Failed),
                        };
                    }
                }
                FromChild::Calls { job, calls } if job == front => {
                    let answers = if job == me {
                        answer(host, calls).await
                    } else {
                        cancelled(calls)
                    };
                    let tainted = job != me || taint.is_marked();
                    let message = ToChild::Answers {
                        job,
                        answers,
                        tainted,
                    };
                    if self.send(&message).await.is_err() {
                        return fail(died("it stopped reading"));
                    }
                }
                FromChild::Log { job, line } => self.log(job, &line),
                _ => return fail(died("an unexpected frame")),
            }
        }
    }

    fn log(&self, job: u64, line: &str) {
        let queue = self.queue.borrow();
        if let Some(q) = queue.iter().find(|q| q.job == job) {
            tracing::info!(target: "transform", tenant = %q.tags.tenant, proxy = %q.tags.proxy, "{line}");
        }
    }

    /// The job is over for its caller while it is still queued: its answer will be dropped.
    fn abandon(&self, job: u64) {
        if let Some(q) = self.queue.borrow_mut().iter_mut().find(|q| q.job == job) {
            // Its frames will come, and its `Done` takes it off the queue.
            q.abandoned = true;
        }
        self.changed.notify_waiters();
    }
}

/// Answers to the calls of a job whose caller went away.
fn cancelled(calls: Vec<crate::natives::PendingCall>) -> Vec<(u64, Result<String, HostError>)> {
    calls
        .into_iter()
        .map(|c| {
            (
                c.id,
                Err(HostError {
                    status: 503,
                    message: "the invocation was cancelled".into(),
                }),
            )
        })
        .collect()
}

/// Abandons the job if its caller goes away: killed with the process if it was running.
struct Watch<'a> {
    sandbox: &'a Sandbox,
    job: u64,
    done: bool,
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let running = self.sandbox.queue.borrow().front().map(|q| q.job) == Some(self.job);
        if running {
            self.sandbox.kill();
        } else {
            self.sandbox.abandon(self.job);
        }
    }
}

/// Kills the process if a streamed frame is dropped half-way.
struct Partial<'a> {
    sandbox: &'a Sandbox,
    armed: bool,
}

impl Drop for Partial<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.sandbox.kill();
        }
    }
}
