//! `docs/openapi.json` must be the document the code generates. When this fails after a change
//! to the API, regenerate it with `just openapi` (or `TESSERA_BLESS_OPENAPI=1 cargo test -p
//! tessera-http --test openapi`) and commit the result.

use std::path::PathBuf;

fn checked_in() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

#[test]
fn checked_in_document_is_current() {
    let generated = tessera_http::openapi::json();
    let path = checked_in();
    if std::env::var_os("TESSERA_BLESS_OPENAPI").is_some() {
        std::fs::write(&path, generated).expect("write docs/openapi.json");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/openapi.json is stale: run `just openapi` and commit it"
    );
}

/// The document is OpenAPI 3.1 and describes every route the api serves, with the key scheme
/// and the problem schema on errors.
#[test]
fn document_covers_every_route() {
    let doc: serde_json::Value =
        serde_json::from_str(tessera_http::openapi::json()).expect("valid JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let expected = [
        ("/applications", &["get", "post"][..]),
        ("/applications/{id}", &["get", "put", "delete"]),
        ("/applications/{id}/regenerate", &["post"]),
        ("/applications/key", &["get"]),
        ("/applications/{id}/keys", &["get", "post"]),
        ("/applications/{id}/keys/{key_id}", &["get", "delete"]),
        ("/tokens", &["get", "post"]),
        ("/tokens/{id}", &["get", "patch", "delete"]),
        ("/tokenize", &["post"]),
        ("/tokens/search", &["post"]),
        ("/v2/tokens", &["get"]),
        ("/v2/tokens/search", &["post"]),
        ("/detokenize", &["post"]),
        ("/tokens/{parent_id}/children", &["get", "post"]),
        (
            "/tokens/{parent_id}/children/{child_id}",
            &["post", "delete"],
        ),
        ("/proxies", &["get", "post"]),
        ("/proxies/{id}", &["get", "put", "patch", "delete"]),
        ("/audit-events", &["get"]),
        ("/webhooks", &["get", "post"]),
        ("/webhooks/{id}", &["get", "put", "delete"]),
        ("/webhooks/event-types", &["get"]),
        ("/webhooks/signing-key", &["get"]),
        ("/webhooks/signing-keys", &["get"]),
        ("/proxy", &["get", "post", "put", "patch", "delete"]),
        ("/proxy/{path}", &["get", "post", "put", "patch", "delete"]),
        ("/healthz", &["get"]),
        ("/readyz", &["get"]),
        ("/metrics", &["get"]),
        ("/openapi.json", &["get"]),
    ];
    let paths = doc["paths"].as_object().expect("paths");
    assert_eq!(paths.len(), expected.len(), "{:?}", paths.keys());
    for (path, methods) in expected {
        for method in methods {
            let op = &doc["paths"][path][method];
            assert!(op.is_object(), "{method} {path} is not described");
            let responses = op["responses"].as_object().expect("responses");
            let errors: Vec<_> = responses
                .iter()
                .filter(|(status, _)| status.starts_with('4') || status.starts_with('5'))
                .collect();
            let cannot_fail = matches!(path, "/healthz" | "/metrics" | "/openapi.json");
            assert!(
                cannot_fail || !errors.is_empty(),
                "{method} {path} describes no error"
            );
            for (status, response) in errors {
                let content = response["content"].as_object().expect("error content");
                let (media, body) = content.iter().next().expect("one media type");
                let schema = body["schema"]["$ref"].as_str().unwrap_or_default();
                if path.starts_with("/proxy") {
                    assert_eq!(media, "application/json", "{method} {path} {status}");
                    assert_eq!(schema, "#/components/schemas/ProxyErrorBody");
                } else {
                    assert_eq!(
                        media, "application/problem+json",
                        "{method} {path} {status}"
                    );
                    assert_eq!(schema, "#/components/schemas/Problem");
                }
            }
        }
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["api_key"],
        serde_json::json!({"type": "apiKey", "in": "header", "name": "SVC-API-KEY"})
    );
    assert_eq!(doc["security"], serde_json::json!([{"api_key": []}]));
}
