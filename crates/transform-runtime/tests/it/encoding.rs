//! Result encoding stays exact to the engine's own `JSON.stringify`: for bodies
//! given member by member and returned untouched, read, written or extended, and for plain
//! values built by the transform, over generated JSON texts (whitespace, escapes, number forms,
//! repeated and array-index keys, `__proto__`). The expected text is computed in the same
//! transform from a fresh `JSON.parse` of the same text with the same change.

use proptest::prelude::*;
use serde_json::Value;
use tessera_transform_runtime::{
    Args, Body, EngineConfig, HostError, HostOp, Input, Isolation, Outcome, TransformEngine,
};

type NoHost = fn(HostOp, Value) -> std::future::Ready<Result<Value, HostError>>;

const COMPARE: &str = r#"module.exports = async (req) => {
  const c = req.configuration;
  const apply = (o) => {
    if (o === null || typeof o !== 'object') return o;
    switch (c.MODE) {
      case 'add': o.added = [1, 'x', { y: null }]; return o;
      case 'read': if (c.KEY in o) void o[c.KEY]; return o;
      case 'write': o[c.KEY] = { w: [2.5, -0] }; return o;
      case 'delete': delete o[c.KEY]; return o;
      case 'copy': return JSON.parse(JSON.stringify(o));
      case 'nested': if (o[c.KEY] && typeof o[c.KEY] === 'object') o[c.KEY].n = 1; return o;
      case 'freeze': Object.freeze(o); if (o[c.KEY] && typeof o[c.KEY] === 'object') o[c.KEY].n = 1; return o;
      case 'redefine': Object.defineProperty(o, c.KEY, { value: 7, writable: true, enumerable: true, configurable: true }); return o;
      case 'reassign': delete o[c.KEY]; o[c.KEY] = 5; return o;
      case 'derived': { const d = Object.create(o); const v = d[c.KEY]; if (v && typeof v === 'object') v.n = 2; return o; }
      default: return o;
    }
  };
  const body = apply(req.args.body);
  const expected = JSON.stringify(apply(JSON.parse(c.TEXT)));
  return { body, headers: { expected } };
};"#;

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i32>().prop_map(|i| i.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f}")),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        prop::sample::select(vec![
            "-0",
            "0",
            "1.0",
            "1e21",
            "1E+2",
            "1e-7",
            "0.000001",
            "5e-324",
            "1e400",
            "123456789012345678901234567890",
            "9007199254740993",
            "0.1",
            "-1.5e-10",
        ])
        .prop_map(str::to_string),
    ]
}

fn raw_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            'a', 'b', 'Z', ' ', '"', '\\', '/', '\n', '\t', '\u{1}', '\u{1f}', '\u{7f}', 'é', '😀',
            '\u{2028}', '0',
        ]),
        0..8,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// A JSON string literal in one of several spellings of the same text.
fn string() -> impl Strategy<Value = String> {
    (raw_string(), 0..3u8).prop_map(|(s, style)| match style {
        0 => serde_json::to_string(&s).expect("string"),
        1 => {
            // Every character as \uXXXX (upper-case hex), surrogate pairs for the rest.
            let mut out = String::from("\"");
            for unit in s.encode_utf16() {
                out.push_str(&format!("\\u{unit:04X}"));
            }
            out.push('"');
            out
        }
        _ => serde_json::to_string(&s)
            .expect("string")
            .replace('/', "\\/"),
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "a",
            "b",
            "card",
            "__proto__",
            "1",
            "01",
            "0",
            "x y",
            "é",
            "toJSON",
            "4294967295",
        ])
        .prop_map(|k| serde_json::to_string(k).expect("key")),
        string(),
    ]
}

fn json_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["null", "true", "false", "\"\\ud800\""]).prop_map(str::to_string),
        number(),
        string(),
    ];
    let value = leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..6), any::<bool>()).prop_map(|(items, ws)| {
                format!("[{}]", items.join(if ws { " , " } else { "," }))
            }),
            (prop::collection::vec((key(), inner), 0..6), any::<bool>()).prop_map(
                |(members, ws)| {
                    let sep = if ws { ": " } else { ":" };
                    let parts: Vec<String> = members
                        .iter()
                        .map(|(k, v)| format!("{k}{sep}{v}"))
                        .collect();
                    format!("{{{}}}", parts.join(if ws { ",\n " } else { "," }))
                }
            ),
        ]
    });
    // Mostly objects at the top: the bodies given member by member.
    (
        prop::collection::vec((key(), value.clone()), 0..7),
        any::<bool>(),
        0..5u8,
    )
        .prop_map(move |(members, ws, shape)| {
            let parts: Vec<String> = members.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            let body = format!("{{{}}}", parts.join(","));
            match (shape, ws) {
                (0, _) => format!("[{body}, 1]"),
                (_, true) => format!(" {body}\n"),
                _ => body,
            }
        })
}

fn input(text: &str, mode: &str, key: &str) -> Input {
    Input {
        args: Args {
            body: Body::Json(text.to_string()),
            headers: vec![("content-type".into(), "application/json".into())],
            method: None,
            path: None,
            query: None,
            status: None,
        },
        configuration: vec![
            ("TEXT".into(), text.to_string()),
            ("MODE".into(), mode.into()),
            ("KEY".into(), key.into()),
        ],
    }
}

/// The first top-level key of `text` as the engine reads it (for the modes that touch one).
fn some_key(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => map.keys().next().cloned().unwrap_or_default(),
        _ => "a".into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn encoding_equals_the_engines_json_stringify(
        text in json_text(),
        mode in prop::sample::select(vec![
            "none", "add", "read", "write", "delete", "copy", "nested", "freeze", "redefine",
            "reassign", "derived",
        ]),
    ) {
        thread_local! {
            static ENGINE: (tokio::runtime::Runtime, TransformEngine) = (
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime"),
                TransformEngine::new(EngineConfig { isolation: Isolation::Inline, ..EngineConfig::default() })
                    .expect("engine"),
            );
        }
        let key = some_key(&text);
        let out = ENGINE.with(|(rt, engine)| {
            let program = engine.compile(COMPARE).expect("compiles");
            rt.block_on(engine.run::<NoHost, _>(program, "p", ("t", "p"), input(&text, mode, &key), None))
        });
        match out {
            Ok(Outcome::Ok { body: Some(body), headers: Some(headers) }) => {
                let expected = &headers.iter().find(|(k, _)| k == "expected").expect("expected").1;
                prop_assert_eq!(&body, expected, "text {} mode {} key {}", text, mode, key);
            }
            other => prop_assert!(false, "{:?} for {} ({})", other, text, mode),
        }
    }
}
