//! The transform runtime on its own: the contract of docs/api.md, "Transforms", the globals, limits and
//! abuse — every test in both isolation modes (inline, and sandbox processes started from this
//! crate's `tessera-transform-sandbox` binary).

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use tessera_testkit::TRANSFORM_ERROR_CLASSES;
use tessera_transform_runtime::{
    Body, EngineConfig, HostError, HostOp, Isolation, Outcome, TransformEngine, TransformError,
};

use crate::{json_input, sandboxed};

both_modes!(
    req_fields_reach_the_transform_and_results_come_back,
    bodies_arrive_parsed_and_leave_encoded,
    error_classes_custom_responses_and_crashes,
    sandbox_refuses_eval_require_and_contains_runaway_code,
    nothing_is_shared_between_proxies,
    the_documented_globals,
    hex_buffers_take_only_hex_digits,
    svc_calls_are_answered_by_the_host,
    many_parallel_invocations,
    a_proxys_retained_memory_does_not_count_against_another,
    a_thrown_null_discards_the_runtime,
    retained_memory_is_bounded,
    quadratic_string_search_is_linear,
    huge_array_likes_are_refused,
    json_bodies_are_given_member_by_member,
    a_backtracking_regular_expression_stops_at_its_deadline,
);

fn config(isolation: Isolation) -> EngineConfig {
    EngineConfig {
        time_limit: Duration::from_millis(500),
        memory_limit: 16 * 1024 * 1024,
        ..sandboxed(isolation)
    }
}

fn engine(config: EngineConfig) -> TransformEngine {
    TransformEngine::new(config).expect("engine")
}

/// `config` with one process per thread (so successive calls meet the same warm runtime) and
/// a 2-second limit: the memory tests' engine.
fn one_process(config: EngineConfig) -> EngineConfig {
    EngineConfig {
        processes_per_thread: 1,
        time_limit: Duration::from_secs(2),
        ..config
    }
}

type NoHost = fn(HostOp, Value) -> std::future::Ready<Result<Value, HostError>>;

async fn run(
    engine: &TransformEngine,
    scope: &str,
    code: &str,
    body: Value,
) -> Result<Outcome, TransformError> {
    let program = engine.compile(code).expect("compiles");
    engine
        .run::<NoHost, _>(
            program,
            scope,
            ("tenant", scope),
            json_input(body, &[]),
            None,
        )
        .await
}

/// The crash of the transform `module.exports = async () => ({ body: <expr> })` in `scope`: its
/// message; any other outcome panics.
async fn crash_of(engine: &TransformEngine, scope: &str, expr: &str) -> String {
    let code = format!("module.exports = async () => ({{ body: {expr} }});");
    match run(engine, scope, &code, json!({})).await {
        Err(TransformError::Crashed(m)) => m,
        other => panic!("{expr}: {other:?}"),
    }
}

/// The returned body as the text that would be sent.
fn text(outcome: Result<Outcome, TransformError>) -> String {
    match outcome {
        Ok(Outcome::Ok { body, .. }) => body.unwrap_or_default(),
        other => panic!("expected a body, got {other:?}"),
    }
}

/// The returned body parsed as JSON.
fn body(outcome: Result<Outcome, TransformError>) -> Value {
    let text = text(outcome);
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

async fn req_fields_reach_the_transform_and_results_come_back(config: EngineConfig) {
    let e = engine(config);
    let code = "module.exports = async function (req) { return { body: { args: { body: req.args.body, method: req.args.method }, cfg: req.configuration, svc: typeof req.svc }, headers: { 'x-a': '1' } }; };";
    let program = e.compile(code).expect("compiles");
    let mut given = json_input(json!({"n": 1}), &[("K", "v")]);
    given.args.method = Some("POST".into());
    let out = e
        .run::<NoHost, _>(program, "p1", ("tenant", "p1"), given, None)
        .await;
    match out {
        Ok(Outcome::Ok { body, headers }) => {
            let body: Value = serde_json::from_str(&body.expect("body")).expect("json");
            assert_eq!(
                body,
                json!({"args": {"body": {"n": 1}, "method": "POST"}, "cfg": {"K": "v"}, "svc": "undefined"})
            );
            assert_eq!(headers, Some(vec![("x-a".to_string(), "1".to_string())]));
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
    assert_eq!(text(out), "text");
}

/// One parse, one serialisation: a JSON body arrives as an object, a returned object leaves as
/// JSON (or as a form for a form message), a string as it is; text that is not JSON arrives as a
/// string; form bodies arrive as objects (repeated names as arrays).
async fn bodies_arrive_parsed_and_leave_encoded(config: EngineConfig) {
    let e = engine(config);
    let echo = "module.exports = async (req) => ({ body: req.args.body });";
    assert_eq!(
        body(run(&e, "b", echo, json!({"a": [1, {"b": null}]})).await),
        json!({"a": [1, {"b": null}]})
    );
    let program = e.compile(echo).expect("compiles");
    let mut not_json = json_input(json!(null), &[]);
    not_json.args.body = Body::Json("{not json".into());
    assert_eq!(
        text(
            e.run::<NoHost, _>(program.clone(), "b", ("t", "b"), not_json, None)
                .await
        ),
        "{not json"
    );
    let mut form = json_input(json!(null), &[]);
    form.args.body = Body::Form(vec![
        ("a".into(), "1".into()),
        ("b".into(), "x y".into()),
        ("a".into(), "2".into()),
    ]);
    form.args.headers = vec![(
        "content-type".into(),
        "application/x-www-form-urlencoded".into(),
    )];
    assert_eq!(
        text(
            e.run::<NoHost, _>(program.clone(), "b", ("t", "b"), form, None)
                .await
        ),
        "a=1&a=2&b=x+y",
        "an object body of a form message is form-encoded"
    );
    let shapes = [
        ("'raw'", "raw"),
        ("42", "42"),
        ("null", "null"),
        ("[1, 'a']", "[1,\"a\"]"),
        ("{ k: 'v' }", "{\"k\":\"v\"}"),
    ];
    for (returned, sent) in shapes {
        let code = format!("module.exports = async () => ({{ body: {returned} }});");
        assert_eq!(
            text(run(&e, "shapes", &code, json!({})).await),
            sent,
            "{returned}"
        );
    }
    match run(
        &e,
        "shapes",
        "module.exports = async () => ({ headers: {} });",
        json!({}),
    )
    .await
    {
        Ok(Outcome::Ok { body, headers }) => {
            assert_eq!(body, None, "no body returned: the original stands");
            assert_eq!(headers, Some(Vec::new()));
        }
        other => panic!("{other:?}"),
    }
}

async fn error_classes_custom_responses_and_crashes(config: EngineConfig) {
    let e = engine(config);
    for (class, status) in TRANSFORM_ERROR_CLASSES {
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
            headers: Some(vec![("x-t".to_string(), "pot".to_string())]),
            body: r#"{"short":"stout"}"#.to_string(),
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

async fn sandbox_refuses_eval_require_and_contains_runaway_code(config: EngineConfig) {
    let e = engine(config);
    let forbidden = [
        "eval('1 + 1')",
        "new Function('return 1')()",
        "require('fs')",
        "typeof process === 'undefined' ? (() => { throw new Error('no process'); })() : 1",
    ];
    for expr in forbidden {
        crash_of(&e, "sandbox", expr).await;
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
            "module.exports = async (req) => ({ body: req.args.body });",
            json!(name),
        )
        .await;
        assert_eq!(text(ok), name, "after {name}");
    }
}

async fn nothing_is_shared_between_proxies(config: EngineConfig) {
    let e = engine(config);
    let writer = "module.exports = async () => { globalThis.leak = 'secret'; Object.prototype.polluted = 'yes'; return { body: 'written' }; };";
    let reader = "module.exports = async () => ({ body: { leak: typeof globalThis.leak, polluted: ({}).polluted === undefined ? 'clean' : 'polluted' } });";
    let clean = json!({"leak": "undefined", "polluted": "clean"});
    for _ in 0..4 {
        assert_eq!(text(run(&e, "proxy-a", writer, json!({})).await), "written");
        assert_eq!(body(run(&e, "proxy-b", reader, json!({})).await), clean);
    }
}

async fn the_documented_globals(config: EngineConfig) {
    let e = engine(config);
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
        strings: ['abcabc'.indexOf('c'), 'abcabc'.lastIndexOf('c'), 'abcabc'.includes('ca'), 'a,b,,c'.split(','),
                  'a.b.c'.replace('.', '-'), 'a.b.c'.replaceAll('.', '-'), [3, 1, 2].sort().join('')],
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
    assert_eq!(
        b["strings"],
        json!([2, 5, true, ["a", "b", "", "c"], "a-b.c", "a-b-c", "123"])
    );
}

/// `Buffer.from(s, "hex")` decodes pairs of hex digits and nothing else: a sign (`+f`, which
/// parsing each pair as a number took for 15), an odd length or a stray character throws.
async fn hex_buffers_take_only_hex_digits(config: EngineConfig) {
    let e = engine(config);
    let code = r#"module.exports = async () => {
      const hex = (s) => {
        try { return Buffer.from(s, 'hex').toString('base64'); }
        catch (err) { return err instanceof Error && err.message.startsWith('Buffer.from:') ? 'refused' : 'other: ' + err; }
      };
      return { body: ['+f', '-1', '+0ff', ' f', '0x', 'abc', 'gg', '0f', 'Ff', ''].map(hex) };
    };"#;
    assert_eq!(
        body(run(&e, "hex", code, json!({})).await),
        json!([
            "refused", "refused", "refused", "refused", "refused", "refused", "refused", "Dw==",
            "/w==", ""
        ])
    );
}

async fn svc_calls_are_answered_by_the_host(config: EngineConfig) {
    let e = engine(config);
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
            json_input(json!({"pan": "4242"}), &[]),
            Some(host),
        )
        .await;
    assert_eq!(
        body(out),
        json!({"id": "tok-4242", "many": 2, "refused": {"status": 403, "message": "the application lacks token:delete"}})
    );
}

/// 200 invocations at once on one thread, each awaiting `req.svc`: inline, they interleave on
/// the thread's runtime while their calls are pending; with processes, they share the pool.
async fn many_parallel_invocations(config: EngineConfig) {
    let e = Arc::new(engine(EngineConfig {
        time_limit: Duration::from_secs(10),
        ..config
    }));
    let code = "module.exports = async (req) => { const t = await req.svc.tokenize({ type: 'token', data: req.args.body.n }); return { body: t }; };";
    let program = e.compile(code).expect("compiles");
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let mut tasks = Vec::new();
            for n in 0..200 {
                let (e, program) = (e.clone(), program.clone());
                tasks.push(tokio::task::spawn_local(async move {
                    let host = |_: HostOp, payload: Value| async move {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        Ok(json!({"id": payload["data"]}))
                    };
                    e.run(
                        program,
                        "parallel",
                        ("t", "p"),
                        json_input(json!({"n": n}), &[]),
                        Some(host),
                    )
                    .await
                }));
            }
            for (n, task) in tasks.into_iter().enumerate() {
                assert_eq!(body(task.await.expect("task")), json!({"id": n}));
            }
        })
        .await;
}

/// One proxy's warm context keeping memory alive must not shrink another proxy's allowance on
/// the same runtime: the allowance is measured afresh whenever the context changes.
async fn a_proxys_retained_memory_does_not_count_against_another(config: EngineConfig) {
    let e = engine(EngineConfig {
        memory_limit: 24 * 1024 * 1024,
        ..one_process(config)
    });
    // The hoarder keeps 8 MiB more on every call; the spender needs 16 MiB of its 24 MiB.
    let hoard = "module.exports = async () => { (globalThis.kept ||= []).push('x'.repeat(8 * 1024 * 1024) + globalThis.kept.length); return { body: 'kept' }; };";
    let spend = "module.exports = async () => { const s = 'y'.repeat(16 * 1024 * 1024); return { body: String(s.length) }; };";
    for _ in 0..3 {
        assert_eq!(text(run(&e, "hoarder", hoard, json!({})).await), "kept");
        assert_eq!(
            text(run(&e, "spender", spend, json!({})).await),
            "16777216",
            "the other proxy keeps its whole allowance"
        );
    }
}

/// A transform keeping 6 MiB more on every call (of its 16 MiB allowance) would grow the
/// process without bound; the warm contexts of a runtime may retain four allowances (64 MiB)
/// between invocations, above which they are dropped: the hoard starts again, and every call
/// succeeds.
async fn retained_memory_is_bounded(config: EngineConfig) {
    let e = engine(one_process(config));
    let hoard = "module.exports = async () => { (globalThis.kept ||= []).push('x'.repeat(6 * 1024 * 1024) + globalThis.kept.length); return { body: String(globalThis.kept.length) }; };";
    let mut counts = Vec::new();
    for _ in 0..24 {
        counts.push(
            text(run(&e, "hoarder", hoard, json!({})).await)
                .parse::<usize>()
                .expect("count"),
        );
    }
    let most = counts.iter().copied().max().unwrap_or(0);
    assert!(most <= 11, "at most ~64 MiB kept: {counts:?}");
    assert!(
        counts.windows(2).any(|w| w[1] < w[0]),
        "the hoard was dropped and started again: {counts:?}"
    );
}

/// An out-of-memory can surface as a thrown `null`,
/// which looked like the tenant's own `throw null` and left the runtime in use. Either way the
/// runtime is discarded: the proxy's warm globals are gone on its next call.
async fn a_thrown_null_discards_the_runtime(config: EngineConfig) {
    let e = engine(one_process(config));
    let code = "module.exports = async (req) => { globalThis.n = (globalThis.n || 0) + 1; if (req.args.body.fail) throw null; return { body: globalThis.n }; };";
    assert_eq!(body(run(&e, "p", code, json!({})).await), json!(1));
    assert_eq!(body(run(&e, "p", code, json!({})).await), json!(2), "warm");
    match run(&e, "p", code, json!({"fail": true})).await {
        Err(TransformError::Crashed(m)) => assert_eq!(m, "the transform threw null"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        body(run(&e, "p", code, json!({})).await),
        json!(1),
        "a fresh runtime: the old heap is not reused"
    );
}

/// `'a'.repeat(2e6).indexOf('a'.repeat(1e6) + 'b')` ran
/// ~40 s in one native call the deadline could not interrupt. The wrapped search is linear:
/// all six searches answer within the time limit, in both modes. The limit is the bound (no
/// wall-clock assertion: a debug build on a loaded CI machine took 5–6 s for the six); the
/// quadratic search needed ~40 s for the first one alone, in a release build.
async fn quadratic_string_search_is_linear(config: EngineConfig) {
    let e = engine(EngineConfig {
        time_limit: Duration::from_secs(30),
        ..config
    });
    let code = "module.exports = async () => ({ body: [\
        'a'.repeat(2e6).indexOf('a'.repeat(1e6) + 'b'), \
        'a'.repeat(2e6).includes('a'.repeat(1e6) + 'b'), \
        'a'.repeat(2e6).lastIndexOf('b' + 'a'.repeat(1e6)), \
        ('a'.repeat(1e6) + 'b').indexOf('a'.repeat(5e5) + 'b'), \
        'a'.repeat(2e6).split('a'.repeat(1e6) + 'b').length, \
        ('x' + 'a'.repeat(1e6) + 'bx').replace('a'.repeat(1e6) + 'b', '-') ] });";
    assert_eq!(
        body(run(&e, "search", code, json!({})).await),
        json!([-1, false, -1, 500000, 1, "x-x"])
    );
}

/// Generic array methods on array-likes with huge lengths loop natively without allocating;
/// they are refused above 2^24 elements.
async fn huge_array_likes_are_refused(config: EngineConfig) {
    let e = engine(config);
    for call in [
        "Array.prototype.join.call({ length: 2 ** 40 }, '')",
        "Array.prototype.reverse.call({ length: 2 ** 53 - 1 })",
        "Array.prototype.fill.call({ length: 2 ** 40 }, 0)",
        "new Array(2 ** 32 - 1).join('')",
    ] {
        let m = crash_of(&e, "arrays", call).await;
        assert!(m.contains("RangeError"), "{call}: {m}");
    }
    assert_eq!(
        body(run(&e, "arrays", "module.exports = async () => ({ body: [new Array(3).join('-'), [1, 2, 3].reverse()] });", json!({})).await),
        json!(["--", [3, 2, 1]])
    );
}

/// an object body's nested members are parsed only when the transform touches them
/// (until then they are accessors), and the returned body is what JSON.stringify writes: an
/// untouched member copied from the text when that is canonical, re-encoded when it is not.
async fn json_bodies_are_given_member_by_member(config: EngineConfig) {
    let e = engine(config);
    let code = "module.exports = async (req) => { const b = req.args.body; \
        const lazy = typeof Object.getOwnPropertyDescriptor(b, 'card').get; \
        b.merchant = 'm'; return { body: b, headers: { lazy, read: String(b.items[1]) } }; };";
    let program = e.compile(code).expect("compiles");
    for (text, sent) in [
        (
            r#"{"card":{"number":"4242"},"items":[1,2],"n":1.5}"#,
            r#"{"card":{"number":"4242"},"items":[1,2],"n":1.5,"merchant":"m"}"#,
        ),
        (
            "{ \"card\" : { \"number\": \"4\\u0032\" , \"x\": 1.0 }, \"items\": [1, 2] }",
            r#"{"card":{"number":"42","x":1},"items":[1,2],"merchant":"m"}"#,
        ),
    ] {
        let mut i = json_input(json!(null), &[]);
        i.args.body = Body::Json(text.into());
        let out = e
            .run::<NoHost, _>(program.clone(), "lazy", ("t", "lazy"), i, None)
            .await;
        match out {
            Ok(Outcome::Ok {
                body: Some(body),
                headers: Some(headers),
            }) => {
                assert_eq!(body, sent, "{text}");
                assert!(
                    headers.contains(&("lazy".into(), "function".into())),
                    "{headers:?}"
                );
                assert!(
                    headers.contains(&("read".into(), "2".into())),
                    "{headers:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

/// the bundled QuickJS-NG polls the interrupt handler inside regular-expression
/// execution (`lre_poll_timeout` in libregexp.c, every 10,000 backtracking steps and loop
/// iterations), so catastrophic backtracking — which would run for ages — ends at the time
/// limit, inline too. (A pattern with a very long literal is another matter: see
/// docs/operations.md.)
async fn a_backtracking_regular_expression_stops_at_its_deadline(config: EngineConfig) {
    let e = engine(config);
    for code in [
        "module.exports = async () => ({ body: String(/(a+)+$/.test('a'.repeat(40) + 'b')) });",
        "module.exports = async () => ({ body: String(/^(a|a)*$/.exec('a'.repeat(60) + '!')) });",
    ] {
        let out = run(&e, "regexp", code, json!({})).await;
        assert_eq!(out, Err(TransformError::TimedOut), "{code}");
    }
    let out = run(
        &e,
        "regexp",
        "module.exports = async () => ({ body: 'fine' });",
        json!({}),
    )
    .await;
    assert_eq!(text(out), "fine", "the next call runs");
}

#[test]
fn syntax_errors_are_reported_with_a_line() {
    let e = engine(config(Isolation::Inline));
    let err = e
        .compile("module.exports = async (req) => {\n  return { body: 1 ;\n};")
        .expect_err("syntax error");
    assert!(err.line.is_some(), "{err:?}");
    assert!(err.message.contains("line"), "{err:?}");
}
