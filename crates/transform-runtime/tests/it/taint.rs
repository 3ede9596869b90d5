//! The taint of an invocation (`TransformEngine::run_with_taint`): the context of an invocation
//! whose host handed it a value its caller must never get back is not kept warm, and an
//! invocation that shared that context is reported tainted too. Both isolation modes.

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use tessera_transform_runtime::{
    EngineConfig, HostError, HostOp, Isolation, Outcome, Taint, TransformEngine, TransformError,
};

use crate::{json_input, sandboxed};

both_modes!(
    a_tainted_context_is_not_kept_warm,
    an_invocation_sharing_a_tainted_context_is_tainted,
);

/// One process per thread, so that successive calls meet the same warm runtime.
fn config(isolation: Isolation) -> EngineConfig {
    EngineConfig {
        time_limit: Duration::from_secs(2),
        processes_per_thread: 1,
        ..sandboxed(isolation)
    }
}

fn text(outcome: Result<Outcome, TransformError>) -> String {
    match outcome {
        Ok(Outcome::Ok {
            body: Some(body), ..
        }) => body,
        other => panic!("unexpected {other:?}"),
    }
}

/// Reads `secret` when asked to and keeps it in a global; otherwise answers the global.
const KEEPER: &str = "module.exports = async (req) => {
  if (req.args.body.read) { globalThis.kept = (await req.svc.tokens.retrieve('t')).data; return { body: 'read' }; }
  return { body: String(globalThis.kept) };
};";

/// Runs `KEEPER` with `body` for scope `scope`; its host hands out `secret`, marking the taint
/// when `bound`.
async fn keeper(
    e: &TransformEngine,
    scope: &str,
    body: Value,
    bound: bool,
) -> (Result<Outcome, TransformError>, bool) {
    let program = e.compile(KEEPER).expect("compiles");
    let taint = Taint::new();
    let host = |_: HostOp, _: Value| {
        let taint = &taint;
        async move {
            if bound {
                taint.mark();
            }
            Ok::<_, HostError>(json!({"data": "secret"}))
        }
    };
    let out = e
        .run_with_taint(
            program,
            scope,
            ("t", scope),
            json_input(body, &[]),
            Some(host),
            &taint,
        )
        .await;
    (out, taint.is_marked())
}

async fn a_tainted_context_is_not_kept_warm(config: EngineConfig) {
    let e = TransformEngine::new(config).expect("engine");
    // An unbound value stays in the warm context: the next call sees it.
    let (out, tainted) = keeper(&e, "plain", json!({"read": true}), false).await;
    assert_eq!((text(out), tainted), ("read".to_string(), false));
    let (out, _) = keeper(&e, "plain", json!({}), false).await;
    assert_eq!(text(out), "secret", "the context was kept warm");
    // A bound one: the context is discarded, the next call starts afresh.
    let (out, tainted) = keeper(&e, "bound", json!({"read": true}), true).await;
    assert_eq!((text(out), tainted), ("read".to_string(), true));
    let (out, tainted) = keeper(&e, "bound", json!({}), false).await;
    assert_eq!((text(out), tainted), ("undefined".to_string(), false));
}

/// Two invocations of one proxy at once: `waiter` starts first and awaits a call that is
/// answered only once `reader` (in the same warm context, inline) has read a bound value into
/// a global and ended; `waiter` then answers that global. Whatever it answers, if it holds the
/// value it must be reported tainted (inline it always is: the context was shared).
async fn an_invocation_sharing_a_tainted_context_is_tainted(config: EngineConfig) {
    let inline = config.isolation == Isolation::Inline;
    let e = TransformEngine::new(EngineConfig {
        processes_per_thread: 3,
        ..config
    })
    .expect("engine");
    let code = "module.exports = async (req) => {
      const t = await req.svc.tokens.retrieve(req.args.body.id);
      if (req.args.body.id === 'bound') { globalThis.kept = t.data; return { body: 'read' }; }
      return { body: String(globalThis.kept) };
    };";
    let program = e.compile(code).expect("compiles");
    let done = Arc::new(tokio::sync::Notify::new());
    let (reader_taint, waiter_taint) = (Taint::new(), Taint::new());
    let waiter_host = |_: HostOp, _: Value| {
        let done = done.clone();
        async move {
            done.notified().await;
            Ok::<_, HostError>(json!({"data": "public"}))
        }
    };
    let reader_host = |_: HostOp, _: Value| {
        let taint = &reader_taint;
        async move {
            taint.mark();
            Ok::<_, HostError>(json!({"data": "secret"}))
        }
    };
    let waiter = e.run_with_taint(
        program.clone(),
        "shared",
        ("t", "shared"),
        json_input(json!({"id": "public"}), &[]),
        Some(waiter_host),
        &waiter_taint,
    );
    let reader = async {
        // Let the waiter start first.
        tokio::task::yield_now().await;
        let out = e
            .run_with_taint(
                program.clone(),
                "shared",
                ("t", "shared"),
                json_input(json!({"id": "bound"}), &[]),
                Some(reader_host),
                &reader_taint,
            )
            .await;
        done.notify_one();
        out
    };
    let (waited, read) = tokio::join!(waiter, reader);
    assert_eq!(text(read), "read");
    assert!(reader_taint.is_marked());
    let waited = text(waited);
    if inline {
        assert_eq!(waited, "secret", "the two shared one context");
    }
    assert!(
        !waited.contains("secret") || waiter_taint.is_marked(),
        "{waited} without the taint"
    );
    assert_eq!(waiter_taint.is_marked(), inline);
}
