//! What both isolation modes share: the engine's settings, compiler and prelude, and the
//! answering of `req.svc` calls through the caller's host function.

use std::{future::Future, sync::Arc};

use serde_json::Value;

use crate::{
    config::EngineConfig,
    message::{HostError, HostOp},
    program::{Compiler, Program},
};

/// The state behind a [`crate::TransformEngine`].
pub(crate) struct Inner {
    pub(crate) config: EngineConfig,
    pub(crate) compiler: Compiler,
    pub(crate) prelude: Arc<Program>,
}

/// Answers `calls` with `host`, concurrently, as JSON text.
pub(crate) async fn answer<H, F>(
    host: Option<&H>,
    calls: Vec<crate::natives::PendingCall>,
) -> Vec<(u64, Result<String, HostError>)>
where
    H: Fn(HostOp, Value) -> F,
    F: Future<Output = Result<Value, HostError>>,
{
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
