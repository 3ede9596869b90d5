//! # tessera-transform-runtime
//!
//! Runs proxy transforms (source §4.8, SUPPLEMENT §7): tenant JavaScript (CommonJS,
//! `module.exports = async function (req) { … }`) in QuickJS, sandboxed.
//!
//! ```text
//!  caller (async) ──Job{program, scope, input JSON}──► worker thread (QuickJS runtime)
//!        ▲   ◄──HostCall{op, payload}── req.svc.* ──┘      warm context per proxy
//!        └──reply{ok | error}──────────────────────►  ──Outcome JSON──► caller
//! ```
//!
//! * The interface is messages only (JSON in, JSON out, `req.svc` calls as [`HostCall`]s the
//!   caller answers), so execution can move into a separate process that holds no key material.
//! * Code is compiled once to bytecode and cached by its SHA-256; only bytecode this process
//!   compiled is ever loaded.
//! * Each worker thread owns one runtime. Contexts are per proxy (and code): never shared
//!   between proxies or tenants; a proxy's warm context may serve its later calls.
//! * Limits: memory per invocation, stack, an interrupt deadline, and an outer wall-clock
//!   timeout (native builtins are not interrupted); a runtime that hit a limit is discarded.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

mod engine;
mod message;
mod program;
mod worker;

pub use engine::{EngineConfig, TransformEngine};
pub use message::{HostCall, HostError, HostOp, Outcome, TransformError};
pub use program::{CompileError, Program};

/// Checks that `source` compiles as a transform (cached by hash), without running it: for
/// validating proxies when they are created or updated.
pub fn check(source: &str) -> Result<(), CompileError> {
    static COMPILER: std::sync::OnceLock<program::Compiler> = std::sync::OnceLock::new();
    COMPILER
        .get_or_init(program::Compiler::default)
        .compile(source)
        .map(|_| ())
}
