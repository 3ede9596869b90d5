//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations and the
//! request and response types, served at `GET /openapi.json` and checked into
//! `docs/openapi.json` (a test fails when that copy is stale; `just openapi` rewrites it).
//!
//! Each route module describes its own operations with their success responses. The failure
//! responses every management operation shares (RFC 7807 bodies) are added here in one place,
//! from what the operation has — a key, a path id, a body — so that no operation can forget one.

use std::sync::OnceLock;

use actix_web::{web, HttpResponse};
use utoipa::{
    openapi::{
        header::{Header, HeaderBuilder},
        path::{Operation, PathItem},
        response::{Response, ResponseBuilder},
        security::{ApiKey, ApiKeyValue, SecurityScheme},
        ContentBuilder, ObjectBuilder, OpenApi as Document, Ref, RefOr, Type,
    },
    Modify, OpenApi,
};

use tessera_service::proxy_error::ErrorKind;

use crate::{
    idempotency::{IDEMPOTENCY_KEY, IDEMPOTENCY_KEY_ALIAS},
    problem::{Problem, PROBLEM_JSON},
};

/// The root of the document: metadata and tags. [`document`] adds the operations, then the
/// security schemes and shared error responses.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera",
        description = "Self-hosted tokenization vault with a detokenizing proxy. Every \
            management call needs an `SVC-API-KEY` header. Failures are RFC 7807 \
            `application/problem+json`; proxy failures are `{\"proxy_error\": <problem>}`. \
            Every response carries `X-Request-Id` (echoed when the caller sent one, else \
            the caller's `SVC-TRACE-ID`). One trailing slash on a management path is ignored.",
        license(name = "Apache-2.0")
    ),
    components(schemas(Problem)),
    security(("api_key" = [])),
    tags(
        (name = "applications", description = "API keys and their permissions."),
        (name = "tokens", description = "Secrets stored as tokens."),
        (name = "associations", description = "Parent and child tokens."),
        (name = "proxies", description = "Pre-configured detokenizing proxies."),
        (name = "proxy invocation", description = "Requests sent through a proxy."),
        (name = "audit", description = "The tamper-evident record of every access to sensitive data."),
        (name = "operations", description = "Probes, metrics and this document."),
    )
)]
struct ApiDoc;

/// Serves the document at `GET /openapi.json` (no key needed). Here rather than among the
/// routes: the document is made from the routes, so a route serving it would import its own
/// importer.
pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi.json", web::get().to(serve));
}

/// The operation of [`serve`].
#[derive(OpenApi)]
#[openapi(paths(serve))]
struct ServeDoc;

/// This document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "operations",
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of this API.",
        body = Object, content_type = "application/json")))]
async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(json())
}

/// The whole document.
pub fn document() -> Document {
    let mut doc = crate::routes::openapi();
    doc.merge(ServeDoc::openapi());
    doc.merge(crate::proxy_mount::Doc::openapi());
    // The modifiers run after the merge so that they see every operation.
    let mut root = ApiDoc::openapi();
    root.merge(doc);
    for modifier in [
        &SecuritySchemes as &dyn Modify,
        &SharedErrors,
        &ProxyErrors,
        &Idempotency,
        &ResponseHeaders,
    ] {
        modifier.modify(&mut root);
    }
    root
}

/// The document as pretty JSON, built once per process.
pub fn json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let mut text = document()
            .to_pretty_json()
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        text.push('\n');
        text
    })
}

/// `api_key` (`SVC-API-KEY`) for management calls and proxies with `require_auth`; the proxy
/// key in its header or query parameter for invocation.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        for (name, key) in [
            ("api_key", ApiKey::Header(ApiKeyValue::new("SVC-API-KEY"))),
            (
                "proxy_key",
                ApiKey::Header(ApiKeyValue::new("SVC-PROXY-KEY")),
            ),
            (
                "proxy_key_query",
                ApiKey::Query(ApiKeyValue::new("svc-proxy-key")),
            ),
        ] {
            components.add_security_scheme(name, SecurityScheme::ApiKey(key));
        }
    }
}

/// The operations of a path (the methods this API uses).
fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
    ]
    .into_iter()
    .flatten()
}

/// Adds the problem responses a management operation can give, unless the operation already
/// describes that status.
struct SharedErrors;

impl Modify for SharedErrors {
    fn modify(&self, doc: &mut Document) {
        for (path, item) in doc.paths.paths.iter_mut() {
            if path.starts_with("/proxy") {
                continue; // described in full by the gateway: `proxy_error` bodies
            }
            let has_id = path.contains('{');
            for operation in operations(item) {
                add_shared_errors(operation, has_id);
            }
        }
    }
}

fn add_shared_errors(operation: &mut Operation, has_id: bool) {
    // Operations that opt out of the key (`security(())`) are the probes: only their own
    // statuses apply.
    let public = operation
        .security
        .as_ref()
        .is_some_and(|s| s.iter().all(is_empty_requirement));
    if public {
        return;
    }
    let has_body = operation.request_body.is_some();
    let mut statuses: Vec<(&str, &str)> = vec![
        ("400", "Malformed input: bad query parameter, path id, JSON, unknown field or validation failure (`errors` by field path)."),
        ("401", "`SVC-API-KEY` missing, malformed, unknown or revoked."),
        ("403", "The key lacks the permission (for tokens: on that container)."),
    ];
    if has_id {
        statuses.push(("404", "Absent, or owned by another tenant."));
    }
    if has_body {
        statuses.push(("413", "The body is above the configured limit."));
        statuses.push(("415", "The body is not `application/json`."));
    }
    statuses.push((
        "429",
        "Over the rate limit configured with `--rate-limit` (per application); `Retry-After` says when to retry.",
    ));
    statuses.push((
        "500",
        "An internal error; `X-Request-Id` finds it in the server log.",
    ));
    statuses.push(("503", "The database is unavailable; retry later."));
    for (status, description) in statuses {
        operation
            .responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| problem_response(description));
    }
    // Request bodies of management calls are required.
    if let Some(body) = operation.request_body.as_mut() {
        body.required = Some(utoipa::openapi::Required::True);
    }
}

/// The `Idempotency-Key` header (and its alias), its 409 and 422, and the `Idempotent-Replayed` header on the
/// operations that honour it.
struct Idempotency;

impl Modify for Idempotency {
    fn modify(&self, doc: &mut Document) {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        for (path, item) in doc.paths.paths.iter_mut() {
            if !crate::idempotency::IDEMPOTENT_POSTS.contains(&path.as_str()) {
                continue;
            }
            let Some(operation) = item.post.as_mut() else {
                continue;
            };
            let schema = ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(tessera_domain::vault::MAX_IDEMPOTENCY_KEY_LEN))
                .pattern(Some("^[\\x20-\\x7E]+$"))
                .build();
            let alias = format!(
                "The same key as `{IDEMPOTENCY_KEY}`, under the name Basis Theory's SDKs send; \
                 both may be sent only with the same value (else 400)."
            );
            for (name, description) in [
                (
                    IDEMPOTENCY_KEY,
                    "Makes retries safe: the first successful answer to this key (per \
                     application, for 24 hours) is replayed with `Idempotent-Replayed: true` \
                     instead of creating again.",
                ),
                (IDEMPOTENCY_KEY_ALIAS, alias.as_str()),
            ] {
                operation.parameters.get_or_insert_with(Vec::new).push(
                    ParameterBuilder::new()
                        .name(name)
                        .parameter_in(ParameterIn::Header)
                        .required(utoipa::openapi::Required::False)
                        .description(Some(description))
                        .schema(Some(schema.clone()))
                        .build(),
                );
            }
            for (status, description) in [
                (
                    "409",
                    "A request with this `Idempotency-Key` is still being processed.",
                ),
                (
                    "422",
                    "This `Idempotency-Key` was used with a different request.",
                ),
            ] {
                operation
                    .responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| problem_response(description));
            }
            for (status, response) in operation.responses.responses.iter_mut() {
                let RefOr::T(response) = response else {
                    continue;
                };
                if status.starts_with('2') {
                    response.headers.insert(
                        "Idempotent-Replayed".to_string(),
                        header(
                            "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.",
                            Some("^true$"),
                        ),
                    );
                }
            }
        }
    }
}

/// Every response carries `X-Request-Id`; proxied responses also
/// `SVC-PROXY-DESTINATION-STATUS`.
struct ResponseHeaders;

impl Modify for ResponseHeaders {
    fn modify(&self, doc: &mut Document) {
        for (path, item) in doc.paths.paths.iter_mut() {
            let proxied = path.starts_with("/proxy");
            for operation in operations(item) {
                for (status, response) in operation.responses.responses.iter_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    response.headers.insert(
                        "X-Request-Id".to_string(),
                        header(
                            "The caller's request id, echoed, or one generated for this request \
                             (on a proxied response, the destination's own when it sent one).",
                            None,
                        ),
                    );
                    if status == "429" {
                        response.headers.insert(
                            "Retry-After".to_string(),
                            header("Seconds to wait before retrying.", Some("^[0-9]+$")),
                        );
                    }
                    if proxied && status == "default" {
                        response.headers.insert(
                            "SVC-PROXY-DESTINATION-STATUS".to_string(),
                            header(
                                "The status the destination answered.",
                                Some("^[1-5][0-9][0-9]$"),
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// Adds the proxy's own failures to both `/proxy` operations, one response per status, from
/// the gateway's [`ErrorKind`] table: the document lists exactly the statuses the gateway
/// answers with, described by the kinds that give them.
struct ProxyErrors;

impl Modify for ProxyErrors {
    fn modify(&self, doc: &mut Document) {
        let documented = ErrorKind::documented_statuses();
        for (path, item) in doc.paths.paths.iter_mut() {
            if path != "/proxy" && !path.starts_with("/proxy/") {
                continue;
            }
            for operation in operations(item) {
                for (status, description) in &documented {
                    let description = if path == "/proxy" {
                        description.as_str()
                    } else {
                        "As for `/proxy`."
                    };
                    operation.responses.responses.insert(
                        status.as_str().to_string(),
                        error_response(description, "application/json", "ProxyErrorBody"),
                    );
                }
            }
        }
    }
}

fn header(description: &str, pattern: Option<&str>) -> Header {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(pattern)
        .build();
    HeaderBuilder::new()
        .schema(schema)
        .description(Some(description))
        .build()
}

/// `{}`: the requirement `security(())` writes, meaning "no key".
fn is_empty_requirement(requirement: &utoipa::openapi::security::SecurityRequirement) -> bool {
    *requirement == Default::default()
}

fn problem_response(description: &str) -> RefOr<Response> {
    error_response(description, PROBLEM_JSON, "Problem")
}

/// A failure response: `description`, with a `content_type` body of the component `schema`.
fn error_response(description: &str, content_type: &str, schema: &str) -> RefOr<Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                content_type,
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name(schema)))
                    .build(),
            )
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every management operation documents its problem responses with the problem schema.
    #[test]
    fn shared_errors_are_attached() {
        let doc: serde_json::Value = serde_json::from_str(json()).expect("valid JSON");
        assert_eq!(doc["openapi"], "3.1.0");
        let get = &doc["paths"]["/tokens/{id}"]["get"]["responses"];
        for status in ["200", "400", "401", "403", "404", "429", "500", "503"] {
            assert!(
                get.get(status).is_some(),
                "GET /tokens/{{id}} lacks {status}"
            );
        }
        assert_eq!(
            get["404"]["content"][PROBLEM_JSON]["schema"]["$ref"],
            "#/components/schemas/Problem"
        );
        let post = &doc["paths"]["/tokens"]["post"]["responses"];
        assert!(post.get("415").is_some() && post.get("413").is_some());
        assert!(post.get("404").is_none(), "no id, no 404");
        let conflict = &doc["paths"]["/applications/{id}"]["delete"]["responses"]["409"];
        assert!(conflict.is_object());
        let healthz = &doc["paths"]["/healthz"]["get"]["responses"];
        assert!(healthz.get("401").is_none(), "probes need no key");
        assert!(healthz["200"]["headers"]["X-Request-Id"].is_object());
        assert!(get["404"]["headers"]["X-Request-Id"].is_object());
        let proxied = &doc["paths"]["/proxy"]["post"]["responses"]["default"]["headers"];
        assert!(proxied["SVC-PROXY-DESTINATION-STATUS"].is_object());
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(schemes["api_key"]["name"], "SVC-API-KEY");
        assert_eq!(schemes["proxy_key"]["name"], "SVC-PROXY-KEY");
        assert_eq!(schemes["proxy_key_query"]["in"], "query");
    }

    /// Every POST of the management API either honours `Idempotency-Key` or creates nothing:
    /// a creating route added later without the middleware fails here.
    #[test]
    fn every_post_is_idempotent_or_creates_nothing() {
        use crate::idempotency::{IDEMPOTENT_POSTS, POSTS_THAT_CREATE_NOTHING};
        let doc = document();
        let mut posts: Vec<&str> = doc
            .paths
            .paths
            .iter()
            .filter(|(path, item)| item.post.is_some() && !path.starts_with("/proxy"))
            .map(|(path, _)| path.as_str())
            .collect();
        posts.sort_unstable();
        let mut listed: Vec<&str> = IDEMPOTENT_POSTS
            .iter()
            .chain(POSTS_THAT_CREATE_NOTHING)
            .copied()
            .collect();
        listed.sort_unstable();
        assert_eq!(posts, listed);
        let json: serde_json::Value = serde_json::from_str(json()).expect("valid JSON");
        for path in IDEMPOTENT_POSTS {
            let params = &json["paths"][path]["post"]["parameters"];
            assert!(
                params
                    .as_array()
                    .is_some_and(|p| p.iter().any(|p| p["name"] == IDEMPOTENCY_KEY)),
                "{path} documents Idempotency-Key"
            );
        }
    }
}
