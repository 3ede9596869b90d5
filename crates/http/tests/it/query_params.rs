//! The query parameters the OpenAPI document declares are exactly those the parsers accept:
//! each list endpoint is asked every name that any endpoint declares (and a few that none
//! does), and a name it does not refuse as unknown must be declared for it, and the other way
//! round. The document's parameter structs (`http/src/query.rs`) are written beside the
//! hand-written parsers; this keeps them from drifting apart.

use actix_web::{http::Method, test as actix_test};
use serde_json::{json, Value};
use tessera_testkit::{
    api::{send, state, tenant},
    db::TestDatabase,
};

/// Names no endpoint declares, asked too (a parser that accepts one is undocumented).
const UNDECLARED: &[&str] = &[
    "q",
    "sort",
    "limit",
    "after",
    "name_contains",
    "container_id",
];

/// The query string that presents `name` to an endpoint (metadata is a deep object).
fn presenting(name: &str, deep_metadata: bool) -> String {
    match name {
        "metadata" if deep_metadata => "metadata%5Bk%5D=v".to_string(),
        "metadata" => "metadata=%7B%22k%22%3A%22v%22%7D".to_string(),
        _ => format!("{name}=1"),
    }
}

/// Whether the answer refuses `name` as an unknown parameter.
fn refused_as_unknown(body: &Value, name: &str) -> bool {
    body["errors"]
        .as_object()
        .into_iter()
        .flatten()
        .any(|(key, messages)| {
            (key == name || key.starts_with(&format!("{name}[")))
                && messages
                    .to_string()
                    .contains("is not a known query parameter")
        })
}

#[actix_web::test]
async fn the_document_declares_exactly_the_query_parameters_the_parsers_accept() {
    let db = TestDatabase::sqlite().await;
    let st = state(&db, 1024 * 1024);
    let admin = tenant(&st, "acme").await.admin_key;
    let app = actix_test::init_service(tessera_http::app(st)).await;
    let token = send(
        &app,
        Method::POST,
        "/tokens",
        Some(&admin),
        Some(json!({"type": "token", "data": 1})),
    )
    .await
    .body["id"]
        .as_str()
        .expect("id")
        .to_string();
    let doc: Value = serde_json::from_str(tessera_http::openapi::json()).expect("document");
    let mut declared_by: Vec<(String, Vec<String>, bool)> = Vec::new();
    for (path, operations) in doc["paths"].as_object().expect("paths") {
        let Some(parameters) = operations["get"]["parameters"].as_array() else {
            continue;
        };
        let query: Vec<&Value> = parameters.iter().filter(|p| p["in"] == "query").collect();
        if query.is_empty() {
            continue;
        }
        let deep = query
            .iter()
            .any(|p| p["name"] == "metadata" && p["style"] == "deepObject");
        let names = query
            .iter()
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect();
        declared_by.push((path.replace("{parent_id}", &token), names, deep));
    }
    let mut asked: Vec<String> = declared_by.iter().flat_map(|(_, n, _)| n.clone()).collect();
    asked.extend(UNDECLARED.iter().map(|s| s.to_string()));
    asked.sort();
    asked.dedup();
    let mut drift = Vec::new();
    for (path, declared, deep) in &declared_by {
        for name in &asked {
            let uri = format!("{path}?{}", presenting(name, *deep));
            let reply = send(&app, Method::GET, &uri, Some(&admin), None).await;
            let accepted = !refused_as_unknown(&reply.body, name);
            if accepted != declared.contains(name) {
                drift.push(format!(
                    "GET {path}: `{name}` is {} but {}",
                    if accepted { "accepted" } else { "refused" },
                    if declared.contains(name) {
                        "declared"
                    } else {
                        "not declared"
                    }
                ));
            }
        }
    }
    assert!(declared_by.len() >= 6, "{declared_by:?}");
    assert!(drift.is_empty(), "{}", drift.join("\n"));
}
