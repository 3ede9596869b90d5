//! Time-budgeted fuzzing of the expression parser and of JSON/form substitution: never panics;
//! JSON in gives JSON out; form in gives a form whose fields are exactly the input's.
//! `FUZZ_SECONDS=600 cargo test -p tessera-detokenize --test it fuzz -- --nocapture` (`just fuzz`).

use proptest::prelude::*;
use serde_json::{json, Value};
use tessera_detokenize::{BodyKind, RequestTemplate, ResolvedToken, Template, Values};
use tessera_domain::TokenId;
use tessera_testkit::fuzz::fuzz;

const IDS: [&str; 2] = [
    "6f9619ff-8b86-4011-b42d-00c04fc964ff",
    "0f5a6360-63f6-457e-b5b2-fd49ebc5fd53",
];

fn values() -> Values {
    IDS.iter()
        .map(|id| {
            let token_id: TokenId = id.parse().expect("id");
            let data = json!({"s": "q\"\\}}{{x}}\n", "n": 1});
            (
                token_id,
                ResolvedToken {
                    data: data.clone().into(),
                    object: Some(json!({"id": id, "data": data}).into()),
                },
            )
        })
        .collect()
}

fn text_with_expressions() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        ".{0,6}",
        "[{}|:'\" a-z0-9.$\\[\\]*-]{0,24}".prop_map(|inner| format!("{{{{{inner}}}}}")),
        (
            0..2usize,
            prop_oneof![
                Just(""),
                Just("| to_string"),
                Just("| stringify | to_base64"),
                Just("| json: '$.s'"),
                Just("| last4")
            ]
        )
            .prop_map(|(i, f)| format!("{{{{ {} {f} }}}}", IDS[i])),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|v| v.concat())
}

#[test]
fn parser_never_panics() {
    let vals = values();
    fuzz("parser", text_with_expressions(), |text| {
        for kind in [BodyKind::Text, BodyKind::Json, BodyKind::Form] {
            if let Ok(t) = Template::prepare(kind, text.as_bytes()) {
                let _ = t.render(&vals);
            }
        }
        if let Ok(t) = RequestTemplate::prepare(None, [("x-h", text.as_bytes())], b"") {
            let _ = t.render(&vals);
        }
        Ok(())
    });
}

#[test]
fn json_and_form_substitution_keep_their_syntax() {
    let vals = values();
    let doc = prop::collection::btree_map("[a-z]{1,4}", text_with_expressions(), 0..5);
    fuzz("substitution", doc, |fields| {
        let json_in = serde_json::to_vec(&fields).expect("json");
        if let Ok(t) = Template::prepare(BodyKind::Json, &json_in) {
            if let Ok(Some(out)) = t.render(&vals) {
                let parsed: Value = serde_json::from_slice(&out).expect("JSON in, JSON out");
                prop_assert_eq!(parsed.as_object().map(|o| o.len()), Some(fields.len()));
            }
        }
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &fields {
            form.append_pair(k, v);
        }
        let form_in = form.finish();
        if let Ok(t) = Template::prepare(BodyKind::Form, form_in.as_bytes()) {
            if let Ok(Some(out)) = t.render(&vals) {
                let keys: Vec<String> = form_urlencoded::parse(&out)
                    .map(|(k, _)| k.into_owned())
                    .collect();
                let expected: Vec<String> = fields.keys().cloned().collect();
                prop_assert_eq!(
                    keys,
                    expected,
                    "substituted values cannot add or remove form fields"
                );
            }
        }
        Ok(())
    });
}
