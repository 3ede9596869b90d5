//! Compiling transform source to QuickJS bytecode, once per distinct source.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rquickjs::{module::WriteOptions, Context, Module, Runtime};
use sha2::{Digest, Sha256};

/// A compiled transform: bytecode of the CommonJS source wrapped as an ES module whose default
/// export is `module.exports`.
pub struct Program {
    hash: [u8; 32],
    bytecode: Vec<u8>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("bytes", &self.bytecode.len())
            .finish_non_exhaustive()
    }
}

impl Program {
    /// SHA-256 of the source.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    pub(crate) fn bytecode(&self) -> &[u8] {
        &self.bytecode
    }

    /// A program from bytecode this process's parent compiled and sent over the sandbox's
    /// private socket (never from anywhere else).
    pub(crate) fn from_parts(hash: [u8; 32], bytecode: Vec<u8>) -> Self {
        Self { hash, bytecode }
    }
}

/// The source does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CompileError {
    /// The engine's message, including the line where it stopped.
    pub message: String,
    /// 1-based line in the transform's own source, when the engine reported one.
    pub line: Option<u32>,
}

/// Lines the wrapper adds before the user's code (for error line numbers).
const WRAPPER_LINES: u32 = 1;

fn wrap(source: &str) -> String {
    format!("const module = {{ exports: {{}} }}; const exports = module.exports;\n{source}\n;export default module.exports;\n")
}

/// Compiles sources and caches the results by source text. A lookup hashes the text with
/// foldhash, not SHA-256: this runs twice per proxied request with transforms, where a SHA-256
/// of the source cost more than running a small transform. The SHA-256 (the program's
/// identity for warm contexts and sandbox processes) is taken once, when compiling.
#[derive(Default)]
pub(crate) struct Compiler {
    cache: Mutex<HashMap<Box<str>, Arc<Program>, foldhash::fast::RandomState>>,
}

impl Compiler {
    /// The program for `source`, compiled at most once per process.
    pub(crate) fn compile(&self, source: &str) -> Result<Arc<Program>, CompileError> {
        if let Some(p) = self.cache.lock().ok().and_then(|c| c.get(source).cloned()) {
            return Ok(p);
        }
        let hash: [u8; 32] = Sha256::digest(source.as_bytes()).into();
        let bytecode = compile_module("transform", &wrap(source), WRAPPER_LINES)?;
        let program = Arc::new(Program { hash, bytecode });
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() > 10_000 {
                cache.clear();
            }
            cache.insert(source.into(), program.clone());
        }
        Ok(program)
    }
}

fn engine_error(message: impl Into<String>) -> CompileError {
    CompileError {
        message: message.into(),
        line: None,
    }
}

/// Compiles the runtime's own prelude (an ES module).
pub(crate) fn compile_prelude(source: &str) -> Result<Arc<Program>, CompileError> {
    Ok(Arc::new(Program {
        hash: Sha256::digest(source.as_bytes()).into(),
        bytecode: compile_module("prelude", source, 0)?,
    }))
}

fn compile_module(name: &str, source: &str, offset: u32) -> Result<Vec<u8>, CompileError> {
    let runtime = Runtime::new().map_err(|e| engine_error(e.to_string()))?;
    runtime.set_memory_limit(64 * 1024 * 1024);
    let context = Context::full(&runtime).map_err(|e| engine_error(e.to_string()))?;
    context.with(|ctx| {
        let declared = Module::declare(ctx.clone(), name, source).map_err(|e| {
            let caught = ctx.catch();
            let exception = caught.as_exception();
            let message = exception.and_then(|ex| ex.message()).unwrap_or_else(|| e.to_string());
            let user_lines = u32::try_from(source.lines().count()).unwrap_or(u32::MAX).saturating_sub(offset + 2);
            let line = exception
                .and_then(|ex| ex.stack())
                .and_then(|stack| stack_line(&stack, name))
                .map(|l| l.saturating_sub(offset));
            // An error past the tenant's last line is in the wrapper: something was left open.
            let (message, line) = match line {
                Some(l) if offset > 0 && l > user_lines => {
                    (format!("{message}: unexpected end of the code (an unclosed brace, bracket or string?)"), Some(user_lines.max(1)))
                }
                other => (message, other),
            };
            CompileError {
                message: match line {
                    Some(l) => format!("{message} (line {l})"),
                    None => message,
                },
                line,
            }
        })?;
        declared
            .write(WriteOptions::default())
            .map_err(|e| engine_error(format!("cannot serialise bytecode: {e}")))
    })
}

/// The line of the first `at <name>:LINE:COL` frame of a stack.
fn stack_line(stack: &str, name: &str) -> Option<u32> {
    let marker = format!("{name}:");
    let at = stack.find(&marker)? + marker.len();
    let digits: String = stack[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_once_and_reports_syntax_errors_with_lines() {
        let c = Compiler::default();
        let a = c
            .compile("module.exports = async (req) => req.args;")
            .expect("compiles");
        let b = c
            .compile("module.exports = async (req) => req.args;")
            .expect("cached");
        assert!(Arc::ptr_eq(&a, &b));
        let e = c
            .compile("module.exports = async (req) => {\n  return {\n}")
            .expect_err("syntax");
        assert!(e.message.contains("line"), "{e:?}");
        assert!(e.line.is_some());
    }
}
