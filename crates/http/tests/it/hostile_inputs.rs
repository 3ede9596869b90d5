//! Hostile inputs at the API: inputs that used to be accepted, to panic or
//! to answer 500 are each a 400 problem naming the field, and change nothing. On both
//! backends.

use actix_web::http::Method;
use actix_web::test::TestRequest;
use serde_json::{json, Value};
use tessera_testkit::api::{app_with_tenant, send_raw, Caller};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    json_bodies_must_be_objects_where_objects_belong,
    times_past_year_9999_in_utc_are_refused_everywhere,
    search_fingerprints_are_64_hex_digits,
    metadata_filters_are_bounded_at_ten_pairs,
    repeated_member_names_are_refused_at_every_depth,
    costly_expressions_and_templates_are_refused_before_they_run,
);

/// `["x","private",["token:read"]]` used to create an application.
async fn json_bodies_must_be_objects_where_objects_belong(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let cases: [(&str, Value); 6] = [
        ("/applications", json!(["x", "private", ["token:read"]])),
        ("/tokens", json!(["token", "secret"])),
        ("/tokens", json!("token")),
        // A bare value is a token; `null` is none (docs/api.md, "`POST /tokenize`").
        ("/tokenize", json!([[null]])),
        ("/tokens/search", json!([])),
        (
            "/proxies",
            json!({"name": "p", "destination_url": "https://example.com/", "request_transform": ["module.exports = async r => r"]}),
        ),
    ];
    for (path, body) in cases {
        let r = c.post(path, body.clone()).await.expect(400);
        assert!(r.body["errors"].is_object(), "{path} {body}: {}", r.body);
    }
    let apps = c.get("/applications").await.expect(200);
    assert_eq!(apps.body["pagination"]["total_items"], 1, "only the admin");
    let tokens = c.get("/tokens").await.expect(200);
    assert_eq!(tokens.body["pagination"]["total_items"], 0);
}

/// `9999-12-31T23:59:59-23:59` is in year 10000 in UTC and used to panic.
async fn times_past_year_9999_in_utc_are_refused_everywhere(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let late = "9999-12-31T23:59:59-23:59";
    let id = c
        .create("/tokens", json!({"type": "token", "data": "x"}))
        .await;
    for (method, path, body, field) in [
        (
            Method::POST,
            "/tokens".to_string(),
            Some(json!({"type": "token", "data": "x", "expires_at": late})),
            "expires_at",
        ),
        (
            Method::POST,
            "/tokens/search".into(),
            Some(json!({"created_after": late})),
            "created_after",
        ),
        (
            Method::GET,
            "/audit-events?from=9999-12-31T23%3A59%3A59-23%3A59".into(),
            None,
            "from",
        ),
        (
            Method::PATCH,
            format!("/tokens/{id}"),
            Some(json!({"expires_at": late})),
            "expires_at",
        ),
    ] {
        let r = c.send(method, &path, body).await.expect(400);
        assert_eq!(r.error_fields(), vec![field], "{path}");
    }
}

/// a NUL in the fingerprint answered 500 on PostgreSQL.
async fn search_fingerprints_are_64_hex_digits(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    for bad in ["a\u{0}b", "abc", &"g".repeat(64), &"a".repeat(65), ""] {
        let r = c
            .post("/tokens/search", json!({"fingerprint": bad}))
            .await
            .expect(400);
        assert_eq!(r.error_fields(), vec!["fingerprint"]);
    }
    let created = json!({"type": "token", "data": "x"});
    let created = c.post("/tokens", created).await.expect(201);
    let upper = created.body["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_ascii_uppercase();
    let found = c
        .post("/tokens/search", json!({"fingerprint": upper}))
        .await
        .expect(200);
    assert_eq!(
        found.body["pagination"]["total_items"], 1,
        "case-insensitive"
    );
}

/// at most ten metadata pairs per search or list filter.
async fn metadata_filters_are_bounded_at_ten_pairs(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let pairs = |n: usize| -> serde_json::Map<String, Value> {
        (0..n).map(|i| (format!("k{i}"), json!("v"))).collect()
    };
    let query = |n: usize| {
        (0..n)
            .map(|i| format!("metadata.k{i}=v"))
            .collect::<Vec<_>>()
            .join("&")
    };
    for (n, status) in [(10, 200), (11, 400)] {
        let search = json!({"metadata": pairs(n)});
        let r = c.post("/tokens/search", search).await.expect(status);
        let listed = c.get(&format!("/tokens?{}", query(n))).await.expect(status);
        if status == 400 {
            assert_eq!(r.error_fields(), vec!["metadata"]);
            assert_eq!(listed.error_fields(), vec!["metadata"]);
        }
    }
}

/// A member name repeated in one object, at any depth of a management or `/detokenize` body,
/// is a 400 naming its path, and nothing is stored: `{"card": {…}, "card": {…}}` used to store
/// two tokens and answer one, and a repeated `number` or `metadata.customer` kept the last.
async fn repeated_member_names_are_refused_at_every_depth(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let id = c
        .create("/tokens", json!({"type": "token", "data": "kept"}))
        .await;
    for (method, path, body, field) in repeated_member_cases(&id) {
        let content_type = if method == Method::PATCH {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        let req = TestRequest::default()
            .method(method.clone())
            .uri(&path)
            .insert_header(("SVC-API-KEY", t.admin_key.clone()))
            .insert_header(("content-type", content_type))
            .set_payload(body.clone());
        let r = send_raw(&app, req).await;
        assert_eq!(r.status, 400, "{method} {path} {body}: {}", r.body);
        assert_eq!(r.error_fields(), vec![field.to_string()], "{body}");
        assert!(!String::from_utf8_lossy(&r.raw).contains("4242424242424242"));
    }
    let tokens = c.get("/tokens").await.expect(200);
    assert_eq!(
        tokens.body["pagination"]["total_items"], 1,
        "only the first"
    );
    let kept = c.get(&format!("/tokens/{id}")).await.expect(200);
    assert_eq!(kept.body["data"], "kept");
    assert!(kept.body["metadata"]
        .as_object()
        .is_none_or(|m| m.is_empty()));
    let apps = c.get("/applications").await.expect(200);
    assert_eq!(apps.body["pagination"]["total_items"], 1, "only the admin");
}

/// Bodies repeating a member name at some depth, by route, with the path each must name.
fn repeated_member_cases(id: &str) -> Vec<(Method, String, String, &'static str)> {
    let card = r#"{"type": "card", "data": {"number": "4242424242424242"}}"#;
    vec![
        (Method::POST, "/tokenize".into(), format!(r#"{{"card": {card}, "card": {card}}}"#), "card"),
        (
            Method::POST,
            "/tokenize".into(),
            r#"[{"type": "token", "data": "a"}, {"type": "token", "data": {"x": 1, "x": 2}}]"#.into(),
            "[1].data.x",
        ),
        (
            Method::POST,
            "/tokens".into(),
            r#"{"type": "card", "data": {"number": "4242424242424242", "number": "4000056655665556"}}"#.into(),
            "data.number",
        ),
        (
            Method::POST,
            "/tokens".into(),
            r#"{"type": "token", "data": "d", "metadata": {"customer": "a", "customer": "b"}}"#.into(),
            "metadata.customer",
        ),
        (
            Method::POST,
            "/tokens".into(),
            r#"{"type": "token", "data": {"a": {"b": {"c": 1, "c": 2}}}}"#.into(),
            "data.a.b.c",
        ),
        (
            Method::POST,
            "/tokens".into(),
            r#"{"type": "token", "type": "token", "data": "d"}"#.into(),
            "type",
        ),
        (
            Method::POST,
            "/applications".into(),
            r#"{"name": "a", "name": "b", "type": "private", "permissions": ["token:read"]}"#.into(),
            "name",
        ),
        (
            Method::POST,
            "/detokenize".into(),
            format!(r#"{{"a": "{{{{ {id} }}}}", "a": "x"}}"#),
            "a",
        ),
        (
            Method::PATCH,
            format!("/tokens/{id}"),
            r#"{"metadata": {"k": "1", "k": "2"}}"#.into(),
            "metadata.k",
        ),
    ]
}

/// Expressions and templates whose parsing or rendering could cost far more than the data
/// they read (docs/api.md, "Expressions"): a JSONPath nested deep enough to exhaust a parser's
/// stack, one that queries the whole document inside a filter, a chain of filters past the
/// cap, growth hidden behind a filter that reduces it, a template past its length or object
/// cap. Each is a 400 naming the field, before anything is decrypted or stored.
async fn costly_expressions_and_templates_are_refused_before_they_run(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let c = Caller::new(&app, &t.admin_key);
    let id = c
        .create("/tokens", json!({"type": "token", "data": {"a": "x"}}))
        .await;
    let deep = |n: usize| format!("$[?{}@.a{}]", "(".repeat(n), ")".repeat(n));
    let requests = [
        (format!("{{{{ {id} | json: '{}' }}}}", deep(100)), "nests"),
        (
            format!("{{{{ {id} | json: '{}' }}}}", deep(5000)),
            "at most 256",
        ),
        (
            format!("{{{{ {id} | json: '$[?count($..*) > 0]' }}}}"),
            "absolute query",
        ),
        (
            format!("{{{{ {id} {} }}}}", "| to_string ".repeat(33)),
            "32 filters",
        ),
    ];
    for (v, why) in requests {
        let r = c.post("/detokenize", json!({ "v": v })).await.expect(400);
        let detail = r.body["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("body/v") && detail.contains(why),
            "{}",
            r.body
        );
    }
    let grows = "{{ data | pad_left: 100000, 'x' | replace: 'x', 'yyyyyyyyyyyyyyyyyyyy' | size }}";
    let creates = [
        (json!({"search_indexes": [grows]}), "search_indexes[0]"),
        (
            json!({"fingerprint_expression": grows}),
            "fingerprint_expression",
        ),
        (json!({"id": "{{ data.a }}".repeat(17)}), "id"),
        (
            json!({"fingerprint_expression": format!("{{{{ data }}}}{}", "x".repeat(2048))}),
            "fingerprint_expression",
        ),
    ];
    for (extra, field) in creates {
        let mut body = json!({"type": "token", "data": {"a": "x"}});
        if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
            b.extend(e);
        }
        let r = c.post("/tokens", body.clone()).await.expect(400);
        assert!(r.body["errors"][field].is_array(), "{body}: {}", r.body);
    }
    let tokens = c.get("/tokens").await.expect(200);
    assert_eq!(
        tokens.body["pagination"]["total_items"], 1,
        "nothing stored"
    );
}
