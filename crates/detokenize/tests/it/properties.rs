//! Property tests: the expression scanner never panics on any input, and JSON substitution
//! always produces valid JSON (with the token values in place, never re-expanded).

use proptest::prelude::*;
use serde_json::{json, Value};
use tessera_detokenize::{BodyKind, RequestTemplate, ResolvedToken, Template, Values};
use tessera_domain::TokenId;

const IDS: [&str; 3] = [
    "6f9619ff-8b86-4011-b42d-00c04fc964ff",
    "0f5a6360-63f6-457e-b5b2-fd49ebc5fd53",
    "b66d4b8f-2a5c-498c-a822-e46edf791f13",
];

/// Token data with characters that break naive substitution.
fn tricky_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        "[\"\\\\{}\\n\\r\\t\\u{0}a-z|:' ]{0,20}".prop_map(Value::from),
        Just(Value::from(format!("{{{{{}}}}}", IDS[1]))),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z\"{}]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A string that may hold expressions among ordinary text.
fn body_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z \"\\\\]{0,8}",
        (0..IDS.len()).prop_map(|i| format!("{{{{{}}}}}", IDS[i])),
        (0..IDS.len()).prop_map(|i| format!("{{{{ token: {} | stringify }}}}", IDS[i])),
        (0..IDS.len()).prop_map(|i| format!("{{{{ {} | to_string }}}}", IDS[i])),
    ];
    prop::collection::vec(piece, 0..4).prop_map(|v| v.concat())
}

fn json_body() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        body_string().prop_map(Value::from),
        any::<i32>().prop_map(Value::from)
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn values(data: &[Value]) -> Values {
    IDS.iter()
        .zip(data)
        .map(|(id, d)| {
            let token_id: TokenId = id.parse().expect("id");
            (
                token_id,
                ResolvedToken {
                    data: d.clone().into(),
                    object: Some(json!({"id": id, "data": d}).into()),
                },
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn scanning_never_panics(text in ".{0,200}") {
        let _ = Template::prepare(BodyKind::Text, text.as_bytes());
        let _ = Template::prepare(BodyKind::Form, text.as_bytes());
        let _ = Template::prepare(BodyKind::Json, text.as_bytes());
        if let Ok(t) = RequestTemplate::prepare(None, [("x-test", text.as_bytes())], b"") {
            let _ = t.render(&values(&[json!(1), json!(2), json!(3)]));
        }
    }

    #[test]
    fn scanning_never_panics_near_expressions(prefix in ".{0,10}", inner in "[{}|:'\" a-z0-9-]{0,60}", suffix in ".{0,10}") {
        let text = format!("{prefix}{{{{{inner}}}}}{suffix}");
        let _ = Template::prepare(BodyKind::Text, text.as_bytes());
    }

    #[test]
    fn json_in_json_out(body in json_body(), data in prop::collection::vec(tricky_value(), 3)) {
        let raw = serde_json::to_vec(&body).expect("serialise");
        let template = Template::prepare(BodyKind::Json, &raw).expect("generated expressions are valid");
        let vals = values(&data);
        let out = template.render(&vals).expect("all ids resolve").unwrap_or(raw);
        let parsed: Value = serde_json::from_slice(&out).expect("output is valid JSON");
        // A string that was exactly `{{id}}` now holds that token's value.
        if let Value::String(s) = &body {
            for (i, id) in IDS.iter().enumerate() {
                if *s == format!("{{{{{id}}}}}") {
                    prop_assert_eq!(&parsed, &data[i]);
                }
            }
        }
    }

    /// Whatever a token holds, a detokenized header value is a valid header value: visible
    /// ASCII and spaces only (no value makes the gateway answer differently).
    #[test]
    fn header_values_are_always_valid(data in tricky_value()) {
        let vals = values(&[data.clone(), json!(1), json!(2)]);
        let value = format!("Bearer {{{{{}}}}}", IDS[0]);
        let t = RequestTemplate::prepare(None, [("x-card", value.as_bytes())], b"").expect("valid");
        let out = t.render(&vals).expect("never fails on a value");
        prop_assert!(out.headers[0].1.bytes().all(|b| (0x20..0x7f).contains(&b)), "{}", out.headers[0].1);
    }

    /// No filter chain fails on any value: the gateway's answer cannot depend on token content.
    #[test]
    fn rendering_never_fails_on_a_value(
        data in prop::collection::vec(tricky_value(), 3),
        chain in prop::collection::vec(prop_oneof![
            Just("| last4"), Just("| to_number"), Just("| to_boolean"), Just("| to_string"),
            Just("| stringify"), Just("| to_base64"), Just("| json: '$.a'"), Just("| json: '$..*'"),
            Just("| json: '$[?@ > 1]'"), Just("| json: '$[0]'"),
        ], 0..4),
        binding in prop_oneof![Just(""), Just("token: ")],
    ) {
        let expr = format!("{{{{ {binding}{} {} }}}}", IDS[0], chain.concat());
        for kind in [BodyKind::Json, BodyKind::Text, BodyKind::Form] {
            let body = match kind {
                BodyKind::Json => serde_json::to_string(&json!({"a": expr, "b": format!("x{expr}")})).expect("json"),
                _ => format!("a={expr}"),
            };
            let t = Template::prepare(kind, body.as_bytes()).expect("valid expression");
            prop_assert!(t.render(&values(&data)).is_ok(), "{expr} failed");
        }
    }
}
