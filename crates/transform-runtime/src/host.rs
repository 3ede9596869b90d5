//! What both isolation modes share: the engine's settings, compiler and prelude, and the
//! answering of `req.svc` calls through the caller's host function.

use std::{future::Future, sync::Arc};

use serde_json::Value;

use crate::{
    config::EngineConfig,
    message::{HostError, HostOp, Input},
    natives::Tags,
    program::{Compiler, Program},
    taint::Taint,
};

/// The state behind a [`crate::TransformEngine`].
pub(crate) struct Inner {
    pub(crate) config: EngineConfig,
    pub(crate) compiler: Compiler,
    pub(crate) prelude: Arc<Program>,
}

/// The caller's host function: answers one `req.svc` call. Named once here so that each mode's
/// functions bound their host by it instead of repeating its signature.
pub(crate) trait HostFn: Fn(HostOp, Value) -> Self::Answer {
    /// The future of one answer.
    type Answer: Future<Output = Result<Value, HostError>>;
}

impl<H, F> HostFn for H
where
    H: Fn(HostOp, Value) -> F,
    F: Future<Output = Result<Value, HostError>>,
{
    type Answer = F;
}

/// One invocation, as [`crate::TransformEngine::run`] hands it to either isolation mode.
pub(crate) struct Run<'a, H> {
    /// The compiled transform.
    pub(crate) program: &'a Program,
    /// What keys warm contexts (the proxy id).
    pub(crate) scope: &'a str,
    /// The `console.log` labels.
    pub(crate) tags: Tags,
    /// The request or response the transform sees.
    pub(crate) input: Input,
    /// Answers `req.svc` calls; without it `req.svc` is absent.
    pub(crate) host: Option<H>,
    /// Marked by `host` when it hands out a value the caller must never get back (and by the
    /// engine when the invocation's context holds one): the context is then discarded.
    pub(crate) taint: &'a Taint,
}

/// Answers `calls` with `host`, concurrently, as JSON text.
pub(crate) async fn answer<H: HostFn>(
    host: Option<&H>,
    calls: Vec<crate::natives::PendingCall>,
) -> Vec<(u64, Result<String, HostError>)> {
    let answers = calls.into_iter().map(|call| async move {
        let result = match host {
            Some(h) => {
                let payload = serde_json::from_str(&call.payload).unwrap_or(Value::Null);
                h(call.op, payload).await.map(|v| v.to_string())
            }
            None => Err(HostError {
                status: 403,
                message: "req.svc is not available: the proxy has no application".into(),
            }),
        };
        (call.id, result)
    });
    futures_util::future::join_all(answers).await
}
