//! Every field of every JSON endpoint, given a value of the wrong type, answers in the words of
//! JSON: no message names a Rust type (`struct ApplicationRef`, `u32`, `a sequence`) or quotes
//! back the string that was sent (docs/api.md, "Errors"). The fields come from the OpenAPI
//! document, so a new endpoint or field is covered when it is described.

use actix_web::{http::Method, test as actix_test};
use serde_json::{json, Map, Value};
use tessera_testkit::{
    api::{send_raw, state, tenant, Caller},
    db::TestDatabase,
};

/// A string sent where it does not belong: it must never come back.
const SENT: &str = "s3cr3t-sent-value";

/// A number too large for the fields that take a bounded one (a card number sent in the wrong
/// field): it must never come back either.
const SENT_NUMBER: u64 = 4_242_424_242_424_242_424;

/// Words that belong to Rust or to serde, not to JSON.
fn rust_words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let camel = word.starts_with(|c: char| c.is_ascii_uppercase())
            && word
                .as_bytes()
                .windows(2)
                .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
        let primitive = [
            "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
            "f32", "f64", "struct", "enum", "sequence", "Vec", "Option", "String",
        ]
        .contains(&word);
        if (camel && word != "JavaScript") || primitive {
            found.push(word.to_string());
        }
    }
    for fragment in ["a map", "::", "unit value"] {
        if text.contains(fragment) {
            found.push(fragment.to_string());
        }
    }
    found
}

/// `schema`, with a `$ref` (also one inside a `oneOf` with `null`) followed.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return resolve(doc, &doc["components"]["schemas"][name]);
    }
    if let Some(options) = schema["oneOf"].as_array() {
        if let Some(other) = options.iter().find(|o| o["type"] != "null") {
            return resolve(doc, other);
        }
    }
    schema
}

/// The JSON type a schema declares first, other than `null`.
fn declared_type(schema: &Value) -> Option<&str> {
    match &schema["type"] {
        Value::String(t) => Some(t.as_str()),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    }
}

/// Values of the wrong type for `schema` (two kinds when its type is not declared).
fn wrong_values(schema: &Value) -> Vec<Value> {
    match declared_type(schema) {
        // A string of a fixed set (`type`, `permissions[0]`): an unknown one must not be quoted.
        Some("string") if schema["enum"].is_array() => {
            vec![json!(12345), json!({"k": SENT}), json!(SENT)]
        }
        Some("string") => vec![json!(12345), json!({"k": SENT})],
        Some("integer" | "number") => vec![json!(SENT), json!([1]), json!(SENT_NUMBER)],
        Some("boolean") => vec![json!(SENT), json!(1)],
        Some("array") => vec![json!(SENT), json!({"k": 1})],
        Some("object") => vec![json!(SENT), json!([SENT])],
        _ => vec![json!(12345), json!(true)],
    }
}

/// Bodies that each put one wrong value at one place of an object of `schema`, nested objects
/// and array items included (to `depth` levels).
fn bodies(doc: &Value, schema: &Value, depth: usize) -> Vec<Value> {
    let schema = resolve(doc, schema);
    let mut out = Vec::new();
    let Some(properties) = schema["properties"].as_object() else {
        return out;
    };
    for (name, property) in properties {
        let property = resolve(doc, property);
        for wrong in wrong_values(property) {
            out.push(json!({ name: wrong }));
        }
        if depth == 0 {
            continue;
        }
        for inner in bodies(doc, property, depth - 1) {
            out.push(json!({ name: inner }));
        }
        if declared_type(property) == Some("array") {
            let item = resolve(doc, &property["items"]);
            for wrong in wrong_values(item) {
                out.push(json!({ name: [wrong] }));
            }
            for inner in bodies(doc, item, depth - 1) {
                out.push(json!({ name: [inner] }));
            }
        }
    }
    out
}

/// The properties of every request schema: what an endpoint whose body is described only as
/// "JSON" (`/tokenize`, `/detokenize`, merge patches) is sent.
fn every_request_field(doc: &Value) -> Vec<Value> {
    let mut all = Map::new();
    for schema in doc["components"]["schemas"]
        .as_object()
        .into_iter()
        .flatten()
    {
        for (name, property) in schema.1["properties"].as_object().into_iter().flatten() {
            all.entry(name.clone()).or_insert_with(|| property.clone());
        }
    }
    bodies(doc, &json!({ "properties": all }), 1)
}

/// Each JSON endpoint (method, path with its parameters filled) and the bodies it is sent.
fn cases(doc: &Value, token: &str, proxy: &str) -> Vec<(Method, String, Vec<Value>)> {
    let mut cases = Vec::new();
    for (path, operations) in doc["paths"].as_object().expect("paths") {
        if path.starts_with("/proxy") && !path.starts_with("/proxies") {
            continue; // forwarded, not decoded
        }
        for (method, operation) in operations.as_object().expect("operations") {
            let Some(content) = operation["requestBody"]["content"].as_object() else {
                continue;
            };
            let Some((_, media)) = content.iter().find(|(t, _)| t.ends_with("json")) else {
                continue;
            };
            let mut sent = match bodies(doc, &media["schema"], 2) {
                described if !described.is_empty() => described,
                _ => every_request_field(doc),
            };
            sent.extend([json!(SENT), json!(12345), json!(null), json!([{"k": SENT}])]);
            let uri = path
                .replace("{parent_id}", token)
                .replace("{child_id}", token)
                .replace(
                    "{id}",
                    if path.starts_with("/proxies") {
                        proxy
                    } else {
                        token
                    },
                );
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            cases.push((method, uri, sent));
        }
    }
    cases
}

#[actix_web::test]
async fn no_decoding_error_names_a_rust_type_or_quotes_the_value_sent() {
    let db = TestDatabase::sqlite().await;
    let st = state(&db, 1024 * 1024);
    let admin = tenant(&st, "acme").await.admin_key;
    let app = actix_test::init_service(tessera_http::app(st)).await;
    let c = Caller::new(&app, &admin);
    let token = c
        .create("/tokens", json!({"type": "token", "data": 1}))
        .await;
    let proxy = c
        .create(
            "/proxies",
            json!({"name": "p", "destination_url": "https://a.example.com"}),
        )
        .await;
    let doc: Value = serde_json::from_str(tessera_http::openapi::json()).expect("document");
    let (mut sent, mut typed, mut refused, mut failures) = (0, 0, 0, Vec::new());
    for (method, uri, bodies) in cases(&doc, &token, &proxy) {
        let content_type = if method == Method::PATCH {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        for body in bodies {
            let req = actix_test::TestRequest::default()
                .method(method.clone())
                .uri(&uri)
                .insert_header(("SVC-API-KEY", admin.as_str()))
                .insert_header(("content-type", content_type))
                .set_payload(body.to_string());
            let reply = send_raw(&app, req).await;
            sent += 1;
            // `/tokenize` takes any JSON of bare values and token requests, and `/detokenize`
            // any JSON: only the bodies of other operations have a shape to refuse.
            if !matches!(uri.as_str(), "/tokenize" | "/detokenize") {
                typed += 1;
                refused += usize::from(reply.status.as_u16() == 400);
            }
            let text = String::from_utf8_lossy(&reply.raw);
            let words = rust_words(&text);
            // A success may hold what was sent (`/detokenize` answers its body); a refusal may not.
            let quoted = reply.status.as_u16() >= 400
                && (text.contains(SENT) || text.contains(&SENT_NUMBER.to_string()));
            if !words.is_empty() || quoted {
                failures.push(format!("{method} {uri} {body} -> {text} ({words:?})"));
            }
        }
    }
    assert!(sent > 300, "only {sent} requests: is the document read?");
    assert!(refused > typed / 2, "{refused} of {typed} refused");
    assert!(
        failures.is_empty(),
        "{} of {sent} answers speak Rust:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_detector_sees_rust_and_spares_json() {
    assert_eq!(
        rust_words("invalid type: string, expected struct ApplicationRef"),
        ["struct", "ApplicationRef"]
    );
    assert_eq!(rust_words("expected u32, found a string"), ["u32"]);
    assert!(rust_words("expected an object {\"id\": \"…\"}, found a string").is_empty());
    assert!(rust_words("the JavaScript does not compile: SyntaxError").len() == 1);
}

/// The shapes stated: an application given as its bare id, a transform given as its code, a
/// number where a name belongs and a number where a type belongs.
#[actix_web::test]
async fn the_expected_shape_is_stated() {
    let db = TestDatabase::sqlite().await;
    let st = state(&db, 1024 * 1024);
    let admin = tenant(&st, "acme").await.admin_key;
    let app = actix_test::init_service(tessera_http::app(st)).await;
    let c = Caller::new(&app, &admin);
    let proxy = |field: &str, value: Value| {
        let mut body = json!({"name": "p", "destination_url": "https://a.example.com"});
        body[field] = value;
        body
    };
    for (path, body, field, message) in [
        (
            "/proxies",
            proxy("application", json!("5f1b7c9e-0000-4000-8000-000000000000")),
            "application",
            r#"expected an object {"id": "…"}, found a string"#,
        ),
        (
            "/proxies",
            proxy("request_transform", json!("module.exports = 1")),
            "request_transform",
            r#"expected an object {"code": "…"}, found a string"#,
        ),
        (
            "/applications",
            json!({"name": 5, "type": "private"}),
            "name",
            "expected a string, found a number",
        ),
        (
            "/applications",
            json!({"name": "a", "type": 5}),
            "type",
            "expected one of the accepted strings",
        ),
    ] {
        let reply = c.post(path, body).await.expect(400);
        assert_eq!(
            reply.body["errors"][field],
            json!([message]),
            "{}",
            reply.body
        );
    }
}
