//! The transform runtime on its own: the contract of SUPPLEMENT §7, the globals, and abuse.

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use tessera_transform_runtime::{
    EngineConfig, HostError, HostOp, Outcome, TransformEngine, TransformError,
};

fn engine() -> TransformEngine {
    TransformEngine::new(EngineConfig {
        workers: 2,
        time_limit: Duration::from_millis(500),
        memory_limit: 16 * 1024 * 1024,
        ..EngineConfig::default()
    })
    .expect("engine")
}

type NoHost = fn(HostOp, Value) -> std::future::Ready<Result<Value, HostError>>;

async fn run(
    engine: &TransformEngine,
    scope: &str,
    code: &str,
    input: Value,
) -> Result<Outcome, TransformError> {
    let program = engine.compile(code).expect("compiles");
    engine
        .run::<NoHost, _>(program, scope, ("tenant", scope), input, None)
        .await
}

fn body(outcome: Result<Outcome, TransformError>) -> Value {
    match outcome {
        Ok(Outcome::Ok { body, .. }) => body.unwrap_or(Value::Null),
        other => panic!("expected a body, got {other:?}"),
    }
}

#[tokio::test]
async fn req_fields_reach_the_transform_and_results_come_back() {
    let e = engine();
    let code = "module.exports = async function (req) { return { body: { args: req.args, cfg: req.configuration, svc: typeof req.svc }, headers: { 'x-a': '1' } }; };";
    let out = run(
        &e,
        "p1",
        code,
        json!({"args": {"body": {"n": 1}, "method": "POST"}, "configuration": {"K": "v"}}),
    )
    .await;
    match out {
        Ok(Outcome::Ok { body, headers }) => {
            assert_eq!(
                body,
                Some(
                    json!({"args": {"body": {"n": 1}, "method": "POST"}, "cfg": {"K": "v"}, "svc": "undefined"})
                )
            );
            assert_eq!(headers, Some(json!({"x-a": "1"})));
        }
        other => panic!("{other:?}"),
    }
    // CommonJS `exports.x` style and a plain (non-async) function work too.
    let out = run(
        &e,
        "p1",
        "module.exports = (req) => ({ body: 'text' });",
        json!({}),
    )
    .await;
    assert_eq!(body(out), json!("text"));
}

#[tokio::test]
async fn error_classes_custom_responses_and_crashes() {
    let e = engine();
    for (class, status) in [
        ("AuthenticationError", 401),
        ("AuthorizationError", 403),
        ("BadRequestError", 400),
        ("InvalidPaymentMethodError", 402),
        ("RateLimitError", 429),
        ("ServiceUnavailableError", 503),
    ] {
        let code = format!("module.exports = async () => {{ throw new {class}('nope'); }};");
        match run(&e, "errors", &code, json!({})).await {
            Ok(Outcome::Http {
                status: s,
                name,
                message,
            }) => {
                assert_eq!(
                    (s, name.as_str(), message.as_str()),
                    (status, class, "nope")
                );
            }
            other => panic!("{class}: {other:?}"),
        }
    }
    let code = "module.exports = async () => { throw new CustomHttpResponseError({ status: 418, headers: { 'x-t': 'pot' }, body: { short: 'stout' } }); };";
    assert_eq!(
        run(&e, "errors", code, json!({})).await,
        Ok(Outcome::Custom {
            status: 418,
            headers: Some(json!({"x-t": "pot"})),
            body: Some(json!({"short": "stout"}))
        })
    );
    match run(
        &e,
        "errors",
        "module.exports = async () => { throw new Error('secret stack?'); };",
        json!({}),
    )
    .await
    {
        Err(TransformError::Crashed(m)) => {
            assert!(m.contains("secret stack?"), "{m}");
            assert!(!m.contains(" at "), "no stack trace: {m}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        run(&e, "errors", "module.exports = 5;", json!({})).await,
        Err(TransformError::Crashed(_))
    ));
    // Throwing null or undefined is a crash with that message, not an out-of-memory.
    for (thrown, expected) in [("null", "threw null"), ("undefined", "threw undefined")] {
        let code = format!("module.exports = async () => {{ throw {thrown}; }};");
        match run(&e, "errors", &code, json!({})).await {
            Err(TransformError::Crashed(m)) => assert!(m.contains(expected), "{m}"),
            other => panic!("throw {thrown}: {other:?}"),
        }
    }
    assert!(matches!(
        run(
            &e,
            "errors",
            "module.exports = async () => 'not an object';",
            json!({})
        )
        .await,
        Err(TransformError::Crashed(_))
    ));
}

#[tokio::test]
async fn sandbox_refuses_eval_require_and_contains_runaway_code() {
    let e = engine();
    for code in [
        "module.exports = async () => ({ body: eval('1 + 1') });",
        "module.exports = async () => ({ body: new Function('return 1')() });",
        "module.exports = async () => ({ body: require('fs') });",
        "module.exports = async () => ({ body: typeof process === 'undefined' ? (() => { throw new Error('no process'); })() : 1 });",
    ] {
        assert!(matches!(run(&e, "sandbox", code, json!({})).await, Err(TransformError::Crashed(_))), "{code}");
    }
    let abusive = [
        ("while", "module.exports = async () => { while (true) {} };"),
        ("recursion", "module.exports = async () => { const f = (n) => f(n + 1) + 1; return { body: f(0) }; };"),
        ("join", "module.exports = async () => ({ body: new Array(1e9).join('x') });"),
        ("string", "module.exports = async () => { let s = 'x'; while (true) { s = s + s; } };"),
        ("big", "module.exports = async () => ({ body: 'x'.repeat(100 * 1024 * 1024) });"),
        ("pending", "module.exports = async () => new Promise(() => {});"),
    ];
    for (name, code) in abusive {
        let result = run(&e, &format!("abuse-{name}"), code, json!({})).await;
        assert!(result.is_err(), "{name}: {result:?}");
        // The engine keeps answering normally.
        let ok = run(
            &e,
            "after",
            "module.exports = async (req) => ({ body: req.args });",
            json!({"args": name}),
        )
        .await;
        assert_eq!(body(ok), json!(name), "after {name}");
    }
}

#[tokio::test]
async fn nothing_is_shared_between_proxies() {
    let e = engine();
    let writer = "module.exports = async () => { globalThis.leak = 'secret'; Object.prototype.polluted = 'yes'; return { body: 'written' }; };";
    let reader = "module.exports = async () => ({ body: { leak: typeof globalThis.leak, polluted: ({}).polluted === undefined ? 'clean' : 'polluted' } });";
    for _ in 0..4 {
        assert_eq!(
            body(run(&e, "proxy-a", writer, json!({})).await),
            json!("written")
        );
        assert_eq!(
            body(run(&e, "proxy-b", reader, json!({})).await),
            json!({"leak": "undefined", "polluted": "clean"})
        );
    }
}

#[tokio::test]
async fn globals_of_the_supplement() {
    let e = engine();
    let code = r#"module.exports = async () => {
      const u = new URL('https://api.example.com:8443/v1/charges?limit=2&x=a+b#frag');
      const p = new URLSearchParams('a=1&b=two%20words&a=3');
      p.append('c', 'x y');
      const bytes = new TextEncoder().encode('héllo');
      return { body: {
        b64: btoa('hello'), unb64: atob('aGVsbG8='),
        uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
        hmac: crypto.createHmac('sha256', 'key').update('The quick brown fox ').update('jumps over the lazy dog').digest('hex'),
        hmac64: crypto.createHmac('sha256', 'key').update('').digest('base64'),
        hex: Buffer.from('hello', 'utf8').toString('hex'), unhex: Buffer.from('68656c6c6f', 'hex').toString('base64'),
        url: [u.protocol, u.hostname, u.port, u.pathname, u.search, u.hash, u.searchParams.get('x'), String(u)],
        params: [p.get('a'), p.getAll('a'), p.get('b'), p.has('z'), p.toString()],
        utf8: [bytes.length, new TextDecoder().decode(bytes)],
        json: JSON.parse(JSON.stringify({ d: new Date(0).toISOString(), m: [...new Map([[1, 2]])] })),
        es2020: [new Proxy({}, { get: (_, k) => 'trapped ' + String(k) }).x, Reflect.ownKeys({ a: 1 }),
                 ({ a: { b: null } }).a?.b ?? 'nullish', Object.fromEntries([['k', 1]]), typeof globalThis,
                 [1, [2, [3]]].flat(2), 'a-b'.replaceAll ? 'a-b'.replaceAll('-', '+') : 'none'],
      } };
    };"#;
    let b = body(run(&e, "globals", code, json!({})).await);
    assert_eq!(b["b64"], json!("aGVsbG8="));
    assert_eq!(b["unb64"], json!("hello"));
    assert_eq!(b["uuid"], json!(true));
    assert_eq!(
        b["hmac"],
        json!("f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8")
    );
    assert_eq!(
        b["hmac64"],
        json!("XV0TlWPJW1lnub2ajJsjOp3ttFByeUzSMtwbdIMmB9A=")
    );
    assert_eq!(b["hex"], json!("68656c6c6f"));
    assert_eq!(b["unhex"], json!("aGVsbG8="));
    assert_eq!(
        b["url"],
        json!([
            "https:",
            "api.example.com",
            "8443",
            "/v1/charges",
            "?limit=2&x=a+b",
            "#frag",
            "a b",
            "https://api.example.com:8443/v1/charges?limit=2&x=a+b#frag"
        ])
    );
    assert_eq!(
        b["params"],
        json!([
            "1",
            ["1", "3"],
            "two words",
            false,
            "a=1&b=two+words&a=3&c=x+y"
        ])
    );
    assert_eq!(b["utf8"], json!([6, "héllo"]));
    assert_eq!(
        b["es2020"],
        json!(["trapped x", ["a"], "nullish", {"k": 1}, "object", [1, 2, 3], "a+b"])
    );
    assert_eq!(
        b["json"],
        json!({"d": "1970-01-01T00:00:00.000Z", "m": [[1, 2]]})
    );
}

#[tokio::test]
async fn svc_calls_are_messages_answered_by_the_host() {
    let e = engine();
    let code = r#"module.exports = async (req) => {
      const t = await req.svc.tokenize({ type: 'token', data: req.args.body.pan });
      const many = await req.svc.tokenize([{ type: 'token', data: 1 }, { type: 'token', data: 2 }]);
      let refused;
      try { await req.svc.tokens.delete('x'); } catch (err) { refused = { status: err.status, message: err.message }; }
      return { body: { id: t.id, many: many.length, refused } };
    };"#;
    let program = e.compile(code).expect("compiles");
    let host = |op: HostOp, payload: Value| async move {
        match op {
            HostOp::Tokenize if payload.is_array() => Ok(json!(payload
                .as_array()
                .map(|a| a.iter().map(|_| json!({"id": "t"})).collect::<Vec<_>>()))),
            HostOp::Tokenize => {
                Ok(json!({"id": format!("tok-{}", payload["data"].as_str().unwrap_or("?"))}))
            }
            HostOp::Delete => Err(HostError {
                status: 403,
                message: "the application lacks token:delete".into(),
            }),
            _ => Err(HostError {
                status: 400,
                message: "unexpected".into(),
            }),
        }
    };
    let out = e
        .run(
            program,
            "svc",
            ("t", "svc"),
            json!({"args": {"body": {"pan": "4242"}}}),
            Some(host),
        )
        .await;
    assert_eq!(
        body(out),
        json!({"id": "tok-4242", "many": 2, "refused": {"status": 403, "message": "the application lacks token:delete"}})
    );
}

#[tokio::test]
async fn many_parallel_invocations() {
    let e = Arc::new(engine());
    let code = "module.exports = async (req) => { const t = await req.svc.tokenize({ type: 'token', data: req.args.n }); return { body: t }; };";
    let program = e.compile(code).expect("compiles");
    let mut tasks = Vec::new();
    for n in 0..200 {
        let (e, program) = (e.clone(), program.clone());
        tasks.push(tokio::spawn(async move {
            let host = |_: HostOp, payload: Value| async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                Ok(json!({"id": payload["data"]}))
            };
            e.run(
                program,
                "parallel",
                ("t", "p"),
                json!({"args": {"n": n}}),
                Some(host),
            )
            .await
        }));
    }
    for (n, task) in tasks.into_iter().enumerate() {
        assert_eq!(body(task.await.expect("task")), json!({"id": n}));
    }
}

#[test]
fn syntax_errors_are_reported_with_a_line() {
    let e = engine();
    let err = e
        .compile("module.exports = async (req) => {\n  return { body: 1 ;\n};")
        .expect_err("syntax error");
    assert!(err.line.is_some(), "{err:?}");
    assert!(err.message.contains("line"), "{err:?}");
}

/// One proxy's warm context keeping memory alive must not shrink another proxy's allowance on
/// the same worker: the allowance is measured afresh whenever the context changes.
#[tokio::test]
async fn a_proxys_retained_memory_does_not_count_against_another() {
    let e = TransformEngine::new(EngineConfig {
        workers: 1,
        time_limit: Duration::from_secs(2),
        memory_limit: 24 * 1024 * 1024,
        ..EngineConfig::default()
    })
    .expect("engine");
    // The hoarder keeps 8 MiB more on every call; the spender needs 16 MiB of its 24 MiB.
    let hoard = "module.exports = async () => { (globalThis.kept ||= []).push('x'.repeat(8 * 1024 * 1024) + globalThis.kept.length); return { body: 'kept' }; };";
    let spend = "module.exports = async () => { const s = 'y'.repeat(16 * 1024 * 1024); return { body: String(s.length) }; };";
    for _ in 0..3 {
        assert_eq!(
            body(run(&e, "hoarder", hoard, json!({})).await),
            json!("kept")
        );
        assert_eq!(
            body(run(&e, "spender", spend, json!({})).await),
            json!("16777216"),
            "the other proxy keeps its whole allowance"
        );
    }
}

/// Attack finding (issue 11, finding 9): an out-of-memory can surface as a thrown `null`,
/// which looked like the tenant's own `throw null` and left the runtime in use. Either way the
/// runtime is discarded: the proxy's warm globals are gone on its next call.
#[tokio::test]
async fn a_thrown_null_discards_the_runtime() {
    let e = TransformEngine::new(EngineConfig {
        workers: 1,
        time_limit: Duration::from_secs(2),
        ..EngineConfig::default()
    })
    .expect("engine");
    let code = "module.exports = async (req) => { globalThis.n = (globalThis.n || 0) + 1; if (req.args.fail) throw null; return { body: globalThis.n }; };";
    assert_eq!(
        body(run(&e, "p", code, json!({"args": {}})).await),
        json!(1)
    );
    assert_eq!(
        body(run(&e, "p", code, json!({"args": {}})).await),
        json!(2),
        "warm"
    );
    match run(&e, "p", code, json!({"args": {"fail": true}})).await {
        Err(TransformError::Crashed(m)) => assert_eq!(m, "the transform threw null"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        body(run(&e, "p", code, json!({"args": {}})).await),
        json!(1),
        "a fresh runtime: the old heap is not reused"
    );
}
