//! The frames exchanged with a sandbox process over its private Unix socket: a 4-byte
//! big-endian length, then one message in `postcard` (compact serde).

use serde::{Deserialize, Serialize};

use crate::{
    message::{HostError, Input, Outcome, TransformError},
    natives::{PendingCall, Tags},
};

/// Largest frame either side accepts.
pub(crate) const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Gateway → sandbox. (No `Debug`: frames carry transform code, request data and token data.)
#[derive(Serialize, Deserialize)]
pub(crate) enum ToChild {
    /// Once, first: the limits and the prelude.
    Init {
        memory: usize,
        retained: usize,
        stack: usize,
        max_contexts: usize,
        client_alias: Option<String>,
        prelude_hash: [u8; 32],
        prelude: Vec<u8>,
    },
    /// A program the gateway compiled, before its first run in this process.
    Load { hash: [u8; 32], bytecode: Vec<u8> },
    /// Run a program.
    Run {
        job: u64,
        program: [u8; 32],
        scope: String,
        tags: Tags,
        input: Box<Input>,
        svc: bool,
        time_limit_ms: u64,
    },
    /// The answers to a job's `req.svc` calls (JSON text, or the refusal); `tainted` when the
    /// job was handed a value its caller must never get back (its context is discarded).
    Answers {
        job: u64,
        answers: Vec<(u64, Result<String, HostError>)>,
        tainted: bool,
    },
}

/// Sandbox → gateway.
#[derive(Serialize, Deserialize)]
pub(crate) enum FromChild {
    /// The job awaits these `req.svc` calls.
    Calls { job: u64, calls: Vec<PendingCall> },
    /// A `console.log` line of job `job` (within its budget); the parent tags it.
    Log { job: u64, line: String },
    /// The job ended.
    Done {
        job: u64,
        result: Result<Outcome, TransformError>,
    },
}

/// Encodes a frame.
pub(crate) fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, String> {
    let body = postcard::to_allocvec(message).map_err(|e| e.to_string())?;
    let len = u32::try_from(body.len()).map_err(|_| "frame too large".to_string())?;
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Decodes a frame body (without its length).
pub(crate) fn decode<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, postcard::Error> {
    postcard::from_bytes(body)
}
