//! `transform_request` and `transform_response` (docs/api.md, "Transforms"): what `req.args` shows, how
//! the returned body and headers shape the request or the 2xx answer, `req.svc` acting as the
//! proxy's application, thrown errors and custom responses, and the containment of abusive
//! code.

use std::{collections::HashSet, sync::Arc, time::Duration};

use http::Method;
use serde_json::{json, Value};
use tessera_domain::{vault::IssuedKey, ApplicationInput};
use tessera_testkit::{
    db::TestDatabase,
    gateway::{Harness, Isolation, Options, Reply},
    isolation_backend_tests, TRANSFORM_ERROR_CLASSES,
};

isolation_backend_tests!(
    the_request_transform_sees_the_detokenized_body,
    the_request_transform_sees_the_method_path_and_query_without_the_proxy_key,
    the_request_transform_sees_lowercased_headers_without_svc_keys,
    the_request_transform_sees_the_proxy_configuration,
    without_an_application_there_is_no_req_svc,
    returned_headers_replace_the_request_headers,
    content_length_follows_the_transformed_body,
    a_returned_string_body_is_sent_as_it_is,
    a_form_body_arrives_as_an_object_and_is_re_encoded,
    the_response_transform_shapes_2xx_answers,
    non_2xx_answers_skip_the_response_transform,
    a_refused_svc_call_rethrown_is_a_500,
    req_svc_tokenizes_and_reads_as_the_proxy_application,
    req_svc_is_refused_what_the_application_may_not_do,
    req_svc_acts_with_the_applications_current_permissions,
    thrown_error_classes_map_to_statuses,
    a_custom_http_response_error_is_answered_as_given,
    custom_responses_outside_final_statuses_fail,
    custom_responses_at_the_bounds_of_final_statuses_are_answered,
    a_crashing_response_transform_is_a_500,
    an_endless_loop_is_stopped,
    unbounded_recursion_is_stopped,
    a_huge_allocation_is_stopped,
    a_promise_that_never_settles_is_stopped,
    eval_is_not_available,
    require_is_not_available,
    globals_and_prototypes_do_not_cross_proxies,
    parallel_invocations_awaiting_svc_all_complete,
);

/// A proxy to the upstream with `transform` (e.g. `{"request_transform": {...}}`) merged into
/// its spec: its key.
async fn transforming(g: &Harness, name: &str, transform: Value) -> String {
    let mut spec = json!({"name": name, "destination_url": g.upstream_url()});
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), transform) {
        spec.extend(extra);
    }
    g.proxy(spec).await.1
}

/// A proxy whose request transform is `code`: its key.
async fn request_transform(g: &Harness, name: &str, code: &str) -> String {
    transforming(g, name, json!({"request_transform": {"code": code}})).await
}

/// `POST /proxy` with no body through `pkey` with the API key `key`.
async fn post(g: &Harness, pkey: &str, key: &str) -> Reply {
    g.keyed(Method::POST, "/proxy", pkey, key).await
}

const ECHO_ARGS: &str = "module.exports = async function (req) {
  const { body, headers, method, path, query } = req.args;
  return {
    body: { seen: { body, method, path, query, ua: headers['user-agent'], key: headers['svc-api-key'] || null,
      proxyKey: headers['svc-proxy-key'] || null, cfg: req.configuration, svc: typeof req.svc } },
    headers: Object.assign({}, headers, { 'x-added': 'yes', 'x-remove-me': null, 'content-type': 'application/json' }),
  };
};";

/// A PATCH with a sub-path, a query (and the proxy key in it too), a user agent, a header the
/// transform removes and a token in the JSON body, through a proxy with a configuration whose
/// request transform returns what it saw: what the upstream received.
async fn echo_args(g: &Harness) -> Reply {
    let key = g.use_key().await;
    let token = g.token(json!("4242424242424242"), None).await;
    let pkey = transforming(
        g,
        "t",
        json!({"configuration": {"MERCHANT": "m_1"}, "request_transform": {"code": ECHO_ARGS}}),
    )
    .await;
    g.call_keyed(
        Method::PATCH,
        "/proxy/a/b?x=1&svc-proxy-key=hidden",
        (&pkey, &key),
        &[
            ("content-type", "application/json"),
            ("user-agent", "UA/1"),
            ("x-remove-me", "gone"),
        ],
        &format!(r#"{{"card": "{{{{{token}}}}}"}}"#),
    )
    .await
    .expect(200)
}

/// [`echo_args`] through a new gateway in `mode` over `db`.
async fn echo_args_in(db: &TestDatabase, mode: Isolation) -> Reply {
    let g = Harness::start_in(db, mode).await;
    echo_args(&g).await
}

async fn the_request_transform_sees_the_detokenized_body(db: &TestDatabase, mode: Isolation) {
    let sent = echo_args_in(db, mode).await.sent_json();
    assert_eq!(
        sent["seen"]["body"],
        json!({"card": "4242424242424242"}),
        "the transform sees the detokenized body"
    );
}

async fn the_request_transform_sees_the_method_path_and_query_without_the_proxy_key(
    db: &TestDatabase,
    mode: Isolation,
) {
    let sent = echo_args_in(db, mode).await.sent_json();
    assert_eq!(sent["seen"]["method"], json!("PATCH"));
    assert_eq!(sent["seen"]["path"], json!("/a/b"));
    assert_eq!(sent["seen"]["query"], json!("?x=1"), "never svc-proxy-key");
}

async fn the_request_transform_sees_lowercased_headers_without_svc_keys(
    db: &TestDatabase,
    mode: Isolation,
) {
    let sent = echo_args_in(db, mode).await.sent_json();
    assert_eq!(
        sent["seen"]["ua"],
        json!("UA/1"),
        "header names are lowercased"
    );
    assert_eq!(
        sent["seen"]["key"],
        Value::Null,
        "SVC-API-KEY is never shown"
    );
    assert_eq!(sent["seen"]["proxyKey"], Value::Null);
}

async fn the_request_transform_sees_the_proxy_configuration(db: &TestDatabase, mode: Isolation) {
    let sent = echo_args_in(db, mode).await.sent_json();
    assert_eq!(sent["seen"]["cfg"], json!({"MERCHANT": "m_1"}));
}

async fn without_an_application_there_is_no_req_svc(db: &TestDatabase, mode: Isolation) {
    let sent = echo_args_in(db, mode).await.sent_json();
    assert_eq!(
        sent["seen"]["svc"],
        json!("undefined"),
        "no application: no req.svc"
    );
}

async fn returned_headers_replace_the_request_headers(db: &TestDatabase, mode: Isolation) {
    let r = echo_args_in(db, mode).await;
    let h = &r.echoed()["headers"];
    assert_eq!(h["x-added"], json!("yes"));
    assert!(
        h.get("x-remove-me").is_none(),
        "returned headers replace the set"
    );
}

async fn content_length_follows_the_transformed_body(db: &TestDatabase, mode: Isolation) {
    let r = echo_args_in(db, mode).await;
    assert_eq!(
        r.echoed()["headers"]["content-length"],
        json!(r.echoed()["body"].as_str().expect("body").len().to_string())
    );
}

/// A string body is sent as it is; `/proxy` alone gives path "".
async fn a_returned_string_body_is_sent_as_it_is(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    let skey = request_transform(&g, "s", "module.exports = async (req) => ({ body: 'raw:' + req.args.path + ':' + req.args.query, headers: req.args.headers });").await;
    let r = g
        .call_keyed(Method::POST, "/proxy", (&skey, &key), &[], "ignored")
        .await
        .expect(200);
    assert_eq!(r.echoed()["body"], json!("raw::"));
}

async fn a_form_body_arrives_as_an_object_and_is_re_encoded(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    let fkey = request_transform(&g, "f", "module.exports = async (req) => { const b = req.args.body; b.extra = 'a b'; return { body: b, headers: req.args.headers }; };").await;
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let r = g
        .call_keyed(Method::POST, "/proxy", (&fkey, &key), &form, "x=1")
        .await
        .expect(200);
    assert_eq!(r.echoed()["body"], json!("x=1&extra=a+b"));
}

/// A proxy whose response transform returns the status, the echoed method and content type,
/// with an `x-shaped` header: its key.
async fn shaping_response_transform(g: &Harness) -> String {
    let code = "module.exports = async (req) => ({ body: { status: req.args.status, method: req.args.body.method, ct: req.args.headers['content-type'] }, headers: { 'x-shaped': '1', 'content-type': 'application/json' } });";
    transforming(g, "r", json!({"response_transform": {"code": code}})).await
}

async fn the_response_transform_shapes_2xx_answers(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    let pkey = shaping_response_transform(&g).await;
    let r = g
        .keyed(Method::PUT, "/proxy", &pkey, &key)
        .await
        .expect(200);
    assert_eq!(
        r.body,
        json!({"status": 200, "method": "PUT", "ct": "application/json"})
    );
    assert_eq!(r.header("x-shaped"), Some("1"));
    assert_eq!(r.header("svc-proxy-destination-status"), Some("200"));
}

async fn non_2xx_answers_skip_the_response_transform(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    let pkey = shaping_response_transform(&g).await;
    let not_found = [("x-echo-status", "404")];
    let r = g
        .call_keyed(Method::PUT, "/proxy", (&pkey, &key), &not_found, "")
        .await
        .expect(404);
    assert_eq!(
        r.body["method"],
        json!("PUT"),
        "non-2xx responses pass through untouched"
    );
    assert!(r.headers.get("x-shaped").is_none());
}

/// Creates the application `inbound` holding `permissions` everywhere.
async fn application(g: &Harness, permissions: Value) -> IssuedKey {
    let app: ApplicationInput = serde_json::from_value(
        json!({"name": "inbound", "type": "private", "permissions": permissions}),
    )
    .expect("input");
    g.vault
        .create_application(&g.admin, app)
        .await
        .expect("application")
}

/// A response transform tokenizing the card number of `body` (one token, then two at once),
/// trying to delete the token, reading it back, and returning the body with the card number
/// replaced by the token's id and what each call gave.
const TOKENIZE_CARD: &str = "module.exports = async (req) => {
  const body = req.args.body;
  const token = await req.svc.tokenize({ type: 'card', data: { number: body.card_number } });
  const both = await req.svc.tokenize([{ type: 'token', data: 'a' }, { type: 'token', data: 'b' }]);
  let refused = null;
  try { await req.svc.tokens.delete(token.id); } catch (err) { refused = err.status; }
  const read = await req.svc.tokens.retrieve(token.id);
  delete body.card_number;
  body.card_token = token.id;
  body.many = both.length;
  body.refused = refused;
  body.last4 = read.data.number.slice(-4);
  return { body, headers: req.args.headers };
};";

/// An anonymous proxy acting as `app` whose request transform sends a card number and whose
/// response transform is [`TOKENIZE_CARD`] on the echoed body: its key.
async fn tokenizing_proxy(g: &Harness, app: &IssuedKey) -> String {
    g.proxy(json!({"name": "inbound2", "destination_url": g.upstream_url(), "require_auth": false,
        "application": {"id": app.application.id.to_string()},
        "request_transform": {"code": "module.exports = async (req) => ({ body: { card_number: '4242424242424242' }, headers: { 'content-type': 'application/json' } });"},
        "response_transform": {"code": TOKENIZE_CARD.replace("req.args.body;", "JSON.parse(req.args.body.body);")}}))
        .await
        .1
}

/// An anonymous `POST /proxy` through a [`tokenizing_proxy`] acting as a new application
/// holding `token:create` and `token:read`: the application, the proxy's key and the 200 answer.
async fn tokenizing_call(g: &Harness) -> (IssuedKey, String, Reply) {
    let issued = application(g, json!(["token:create", "token:read"])).await;
    let pkey = tokenizing_proxy(g, &issued).await;
    let r = g
        .call(Method::POST, "/proxy", &[("svc-proxy-key", &pkey)], "")
        .await
        .expect(200);
    (issued, pkey, r)
}

async fn a_refused_svc_call_rethrown_is_a_500(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let issued = application(&g, json!(["token:create", "token:read"])).await;
    let (_, pkey) = g.proxy(json!({"name": "inbound", "destination_url": g.upstream_url(), "require_auth": false,
        "application": {"id": issued.application.id.to_string()}, "response_transform": {"code": TOKENIZE_CARD}})).await;
    let r = g
        .call(
            Method::POST,
            "/proxy",
            &[("svc-proxy-key", &pkey), ("x-echo-status", "201")],
            "",
        )
        .await;
    assert_eq!(
        r.status, 500,
        "the echo has no card_number: the tokenize call is refused as a 400 and rethrown: {}",
        r.body
    );
}

async fn req_svc_tokenizes_and_reads_as_the_proxy_application(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let (issued, _, r) = tokenizing_call(&g).await;
    let b = &r.body;
    assert!(
        b.get("card_number").is_none(),
        "the card number never reaches the caller"
    );
    assert_eq!(
        (b["many"].clone(), b["last4"].clone()),
        (json!(2), json!("4242"))
    );
    let id: tessera_domain::TokenId = b["card_token"]
        .as_str()
        .expect("token id")
        .parse()
        .expect("uuid");
    let reader = g
        .vault
        .authenticate(Some(issued.api_key.expose()))
        .await
        .expect("app key");
    let token = g
        .vault
        .get_token(&reader, id)
        .await
        .expect("readable with the application's key");
    assert_eq!(token.data.expose()["number"], json!("4242424242424242"));
}

async fn req_svc_is_refused_what_the_application_may_not_do(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let (_, _, r) = tokenizing_call(&g).await;
    assert_eq!(
        r.body["refused"],
        json!(403),
        "no token:delete: the delete is refused"
    );
}

/// The application loses `token:create`: the next invocation acts with the new permissions at
/// once (the cached principal is dropped by the update in this process).
async fn req_svc_acts_with_the_applications_current_permissions(
    db: &TestDatabase,
    mode: Isolation,
) {
    let g = Harness::start_with(
        db,
        Options {
            cache_ttl: Some(Duration::from_secs(600)),
            ..Options::default().with_isolation(mode)
        },
    )
    .await;
    let (issued, pkey, _) = tokenizing_call(&g).await;
    let narrowed: ApplicationInput = serde_json::from_value(
        json!({"name": "inbound", "type": "private", "permissions": ["token:read"]}),
    )
    .expect("input");
    g.vault
        .update_application(&g.admin, issued.application.id, narrowed)
        .await
        .expect("update");
    let r = g
        .call(Method::POST, "/proxy", &[("svc-proxy-key", &pkey)], "")
        .await;
    assert_eq!(r.status, 500, "{}", r.body);
    let detail = r.body["proxy_error"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("token:create"), "{detail}");
}

async fn thrown_error_classes_map_to_statuses(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    for (class, status) in TRANSFORM_ERROR_CLASSES {
        let code =
            format!("module.exports = async () => {{ throw new {class}('card declined'); }};");
        let pkey = request_transform(&g, class, &code).await;
        let before = g.upstream.hits();
        let r = post(&g, &pkey, &key).await.proxy_error(status);
        assert_eq!(r.body["proxy_error"]["title"], json!(class));
        assert_eq!(
            r.body["proxy_error"]["errors"],
            json!({"error": ["card declined"]})
        );
        assert_eq!(
            g.upstream.hits(),
            before,
            "a thrown request transform never reaches the destination"
        );
    }
}

async fn a_custom_http_response_error_is_answered_as_given(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    let custom = "module.exports = async () => { throw new CustomHttpResponseError({ status: 418, headers: { 'x-tea': 'pot', 'svc-proxy-warning': 'forged', 'svc-proxy-destination-status': '200' }, body: { brewed: false } }); };";
    let pkey = request_transform(&g, "custom", custom).await;
    let r = post(&g, &pkey, &key).await.expect(418);
    assert_eq!(r.body, json!({"brewed": false}));
    assert_eq!(r.header("x-tea"), Some("pot"));
    // Tessera's own answer headers are not the transform's to set.
    assert_eq!(r.header("svc-proxy-warning"), None);
    assert_eq!(r.header("svc-proxy-destination-status"), None);
}

/// A request transform answering `status` with `CustomHttpResponseError`: its key.
async fn custom_response(g: &Harness, status: u16) -> String {
    let code = format!("module.exports = async () => {{ throw new CustomHttpResponseError({{ status: {status}, body: 'x' }}); }};");
    request_transform(g, "c", &code).await
}

/// `CustomHttpResponseError({status: 101, body})` wrote a
/// 1xx status with a body. Statuses outside 200–599 are a 500 proxy error.
async fn custom_responses_outside_final_statuses_fail(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    for status in [101, 100, 199, 600, 999] {
        let pkey = custom_response(&g, status).await;
        let r = post(&g, &pkey, &key).await.proxy_error(500);
        assert!(r.detail().contains("200 to 599"), "{status}");
    }
}

async fn custom_responses_at_the_bounds_of_final_statuses_are_answered(
    db: &TestDatabase,
    mode: Isolation,
) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    for status in [200, 599] {
        let pkey = custom_response(&g, status).await;
        post(&g, &pkey, &key).await.expect(status);
    }
}

async fn a_crashing_response_transform_is_a_500(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    let crash = "module.exports = async () => { null.boom; };";
    let pkey = transforming(&g, "crash", json!({"response_transform": {"code": crash}})).await;
    let r = post(&g, &pkey, &key).await.proxy_error(500);
    let detail = r.body["proxy_error"]["detail"].as_str().expect("detail");
    assert!(detail.starts_with("transform failed"), "{detail}");
}

/// A request transform running `code` is a 500, and the gateway still forwards for another
/// proxy right after.
async fn contained(db: &TestDatabase, mode: Isolation, code: &str) {
    let g = Harness::start_in(db, mode).await;
    let (key, good) = (g.use_key().await, g.plain_proxy().await);
    let pkey = request_transform(&g, "abuse", code).await;
    post(&g, &pkey, &key).await.proxy_error(500);
    g.keyed(Method::GET, "/proxy", &good, &key)
        .await
        .expect(200);
}

/// One test per abuse: a request transform running its code is [`contained`].
macro_rules! contained_tests {
    ($($name:ident: $code:literal;)*) => {
        $(
            async fn $name(db: &TestDatabase, mode: Isolation) {
                contained(db, mode, $code).await;
            }
        )*
    };
}

contained_tests! {
    an_endless_loop_is_stopped: "module.exports = async () => { while (true) {} };";
    unbounded_recursion_is_stopped: "module.exports = async () => { const f = () => f(); f(); };";
    a_huge_allocation_is_stopped:
        "module.exports = async () => ({ body: 'x'.repeat(100 * 1024 * 1024) });";
    a_promise_that_never_settles_is_stopped: "module.exports = async () => new Promise(() => {});";
    eval_is_not_available: "module.exports = async () => ({ body: eval('1') });";
    require_is_not_available: "module.exports = async () => ({ body: require('fs') });";
}

async fn globals_and_prototypes_do_not_cross_proxies(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    let key = g.use_key().await;
    let writer = request_transform(&g, "w",
        "module.exports = async (req) => { globalThis.stash = 'secret'; Object.prototype.evil = 1; return { body: 'w', headers: req.args.headers }; };").await;
    let reader = request_transform(&g, "r",
        "module.exports = async (req) => ({ body: typeof globalThis.stash + ',' + ({}).evil, headers: req.args.headers });").await;
    for _ in 0..3 {
        post(&g, &writer, &key).await.expect(200);
        let r = post(&g, &reader, &key).await.expect(200);
        assert_eq!(r.echoed()["body"], json!("undefined,undefined"));
    }
}

async fn parallel_invocations_awaiting_svc_all_complete(db: &TestDatabase, mode: Isolation) {
    // What is checked is that every invocation completes, not how fast: 200 tokenizations at
    // once on a debug build and a shared two-core machine can outlast the harness's short
    // 500 ms limit (the time awaiting `req.svc` counts), so this test allows 30 s.
    let mut options = Options::default().with_isolation(mode);
    options.engine.time_limit = Duration::from_secs(30);
    let g = Harness::start_with(db, options).await;
    let issued = application(&g, json!(["token:create"])).await;
    let code = "module.exports = async (req) => { const t = await req.svc.tokenize({ type: 'token', data: req.args.query }); return { body: { id: t.id }, headers: { 'content-type': 'application/json' } }; };";
    let (_, pkey) = g.proxy(json!({"name": "par", "destination_url": g.upstream_url(), "require_auth": false,
        "application": {"id": issued.application.id.to_string()}, "request_transform": {"code": code}})).await;
    let g = Arc::new(g);
    let mut tasks = Vec::new();
    for i in 0..200 {
        let (g, pkey) = (g.clone(), pkey.clone());
        tasks.push(tokio::spawn(async move {
            g.call(
                Method::POST,
                &format!("/proxy?n={i}"),
                &[("svc-proxy-key", &pkey)],
                "",
            )
            .await
        }));
    }
    let mut ids = HashSet::new();
    for task in tasks {
        let r = task.await.expect("task").expect(200);
        assert!(ids.insert(r.sent_json()["id"].as_str().expect("id").to_string()));
    }
    assert_eq!(ids.len(), 200);
}
