//! # tessera-transform-runtime
//!
//! Runs proxy transforms (docs/api.md, "Transforms"): tenant JavaScript (CommonJS,
//! `module.exports = async function (req) { … }`) in QuickJS, sandboxed, in one of two places:
//!
//! ```text
//!  inline   the thread serving the request owns a QuickJS runtime and runs the transform there;
//!           req.svc calls are futures awaited on that thread (no hand-off, no copy)
//!  process  a pool of sandbox processes per serving thread: no key material, no files or
//!           sockets (seccomp), killed when a transform outlives its time limit
//! ```
//!
//! * The body enters the engine once (a JSON body as its text, parsed by the engine) and the
//!   result leaves it once (encoded by the host from the engine's values, exactly as
//!   `JSON.stringify` would): no intermediate JSON trees.
//! * Code is compiled once to bytecode and cached by its source text; only bytecode this process
//!   compiled is ever loaded (a sandbox process loads what its parent sent).
//! * Contexts are per proxy (and code): never shared between proxies or tenants; a proxy's warm
//!   context may serve its later calls.
//! * Limits: memory per invocation, stack, an interrupt deadline, and builtins whose native
//!   loops the deadline cannot interrupt replaced by bounded or interruptible versions; a
//!   runtime that hit a limit is discarded.

// QuickJS bytecode loading is `unsafe` in rquickjs (it trusts the bytes): this crate is the one
// place allowed to do it, and it only ever loads bytecode this process compiled. The sandbox
// process also takes its descriptors and probes its confinement through `unsafe` calls.
#![allow(unsafe_code)]

mod config;
mod engine;
mod host;
mod inline;
mod json;
mod memory;
mod message;
mod natives;
mod number;
mod outcome;
mod process;
mod program;
mod raw_json;
mod runtime;
mod taint;

pub use config::{EngineConfig, Isolation, SandboxCommand, SANDBOX_ARG};
pub use engine::TransformEngine;
pub use message::{Args, Body, HostError, HostOp, Input, Outcome, TransformError};
pub use natives::{PendingCall, Tags};
pub use process::sandbox_main;
pub use program::{CompileError, Program};
pub use taint::Taint;

/// Checks that `source` compiles as a transform (cached by hash), without running it: for
/// validating proxies when they are created or updated.
pub fn check(source: &str) -> Result<(), CompileError> {
    static COMPILER: std::sync::OnceLock<program::Compiler> = std::sync::OnceLock::new();
    COMPILER
        .get_or_init(program::Compiler::default)
        .compile(source)
        .map(|_| ())
}

/// [`check`] as the vault's compile check of proxies' transforms
/// ([`tessera_domain::Vault::with_transform_check`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct CompileCheck;

impl tessera_domain::TransformCheck for CompileCheck {
    fn check(&self, code: &str) -> Result<(), String> {
        check(code).map_err(|e| e.to_string())
    }
}
