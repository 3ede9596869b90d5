//! One QuickJS runtime with its warm per-proxy contexts, and the step-wise driver of an
//! invocation. The same code runs transforms inline (on the thread serving the request) and in
//! sandbox processes.
//!
//! An invocation runs in *segments*: synchronous stretches of JavaScript, each ending with the
//! engine's job queue drained. A segment ends in one of three ways: the transform's promise
//! settled (done), it awaits `req.svc` calls (the caller answers them, asynchronously or over a
//! channel, and resumes it), or it awaits nothing that can ever settle (a failure: there are no
//! timers). Between segments no JavaScript runs, so several invocations can interleave on one
//! runtime while they wait for the vault, and every job in the queue belongs to the invocation
//! whose segment is running.
//!
//! * `js.rs`: the runtime, its limits and warm contexts;
//! * `input.rs`: `req.args` and `req.configuration` as engine values (the JSON body's members
//!   lazily, see `crate::raw_json`);
//! * `invocation.rs`: starting, resuming and reading the outcome of an invocation.

mod descriptor;
mod input;
mod invocation;
mod js;

pub(crate) use js::{Job, JsRuntime, Limits, Step};
