//! `POST /detokenize`, as Basis Theory's SDKs call it: any JSON value with its expressions
//! replaced by token data, for callers holding `token:read` on each token's container, on both
//! backends.

use actix_web::{http::Method, test};
use serde_json::{json, Value};
use tessera_testkit::api::{app_with_tenant, send_raw, state, tenant, Caller};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    expressions_in_any_json_value_are_replaced_and_audited,
    the_caller_needs_read_not_use,
    unknown_and_other_tenants_tokens_are_the_same_400,
    destination_bound_tokens_are_refused,
    the_proxys_limits_apply,
    no_answer_depends_on_a_tokens_value,
);

const CARD: &str = "4242424242424242";

fn card(container: &str) -> Value {
    json!({"type": "card", "containers": [container],
        "data": {"number": CARD, "expiration_month": 12, "expiration_year": 2030, "cvc": "123"}})
}

/// Objects, arrays and bare strings are answered with their expressions replaced; a body
/// without expressions comes back as it was; the read is a `token.read` naming the tokens.
async fn expressions_in_any_json_value_are_replaced_and_audited(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = Caller::new(&app, &t.admin_key);
    let id = admin.create("/tokens", card("/pci/")).await;
    let body = json!({
        "card": format!("{{{{ {id} }}}}"),
        "nested": [{"l4": format!("ends {{{{ {id} | json: '$.number' | last4 }}}}")}],
        "month": format!("{{{{ {id} | json: '$.expiration_month' | to_string }}}}"),
        "same_id": format!("{{{{ token: {id} | json: '$.id' }}}}"),
        "plain": 7
    });
    let r = admin.post("/detokenize", body).await.expect(200);
    assert_eq!(
        r.body,
        json!({
            "card": {"number": CARD, "expiration_month": 12, "expiration_year": 2030, "cvc": "123"},
            "nested": [{"l4": "ends 4242"}],
            "month": "12",
            "same_id": id,
            "plain": 7
        })
    );
    let r = admin
        .post(
            "/detokenize",
            json!([format!("{{{{ {id} | json: '$.cvc' | to_number }}}}")]),
        )
        .await
        .expect(200);
    assert_eq!(r.body, json!([123]));
    let r = admin
        .post(
            "/detokenize",
            json!(format!("{{{{ {id} | json: '$.number' }}}}")),
        )
        .await
        .expect(200);
    assert_eq!(r.body, json!(CARD));
    let untouched = json!({"a": [1, "two", null, {"b": true}]});
    let r = admin
        .post("/detokenize", untouched.clone())
        .await
        .expect(200);
    assert_eq!(r.body, untouched);
    let trail = admin.page("/audit-events?action=token.read").await;
    let events = trail["data"].as_array().expect("events");
    assert_eq!(events.len(), 3, "one per call that detokenized: {trail}");
    for event in events {
        assert_eq!(event["resource_ids"], json!([id]));
        assert_eq!(event["outcome"], "success");
    }
}

/// `token:use` lets a proxy send a value on, not reveal it: 403. `token:read` is needed on
/// every token's container; a key without it anywhere is refused before anything is read,
/// whether the token exists or not; refusals are recorded as denied.
async fn the_caller_needs_read_not_use(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = Caller::new(&app, &t.admin_key);
    let pci = admin.create("/tokens", card("/pci/")).await;
    let general = admin.create("/tokens", card("/general/")).await;
    let user = admin
        .app_key(
            json!({"name": "u", "type": "private", "permissions": ["token:use", "token:create"]}),
        )
        .await;
    let user = admin.with_key(&user);
    let body = |id: &str| json!({"n": format!("{{{{ {id} }}}}")});
    let refused = user.post("/detokenize", body(&pci)).await.expect(403);
    let unknown = uuid::Uuid::new_v4().to_string();
    let refused_unknown = user.post("/detokenize", body(&unknown)).await.expect(403);
    assert_eq!(refused.body["detail"], refused_unknown.body["detail"]);
    let reader = admin
        .app_key(
            json!({"name": "r", "type": "private", "permissions": ["token:use"], "rules": [
                {"priority": 1, "container": "/pci/", "permissions": ["token:read"]}
            ]}),
        )
        .await;
    let reader = admin.with_key(&reader);
    let r = reader.post("/detokenize", body(&pci)).await.expect(200);
    assert_eq!(r.body["n"]["number"], CARD);
    let both = json!([format!("{{{{ {pci} }}}}"), format!("{{{{ {general} }}}}")]);
    let r = reader.post("/detokenize", both).await.expect(403);
    assert!(!r.raw.windows(CARD.len()).any(|w| w == CARD.as_bytes()));
    // The two identical refusals of `user` are folded into one event (and a count later).
    let trail = admin
        .page("/audit-events?action=token.read&outcome=denied")
        .await;
    let reasons: Vec<&str> = trail["data"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert_eq!(
        reasons,
        [
            "the API key lacks `token:read` on container /general/",
            "the API key lacks `token:read`"
        ],
        "{trail}"
    );
}

/// An id that exists nowhere and another tenant's token get the same 400 as in the proxy;
/// a syntax error is a 400 naming where it is.
async fn unknown_and_other_tenants_tokens_are_the_same_400(db: &TestDatabase) {
    let st = state(db, 1024 * 1024);
    let acme = tenant(&st, "acme").await;
    let other = tenant(&st, "other").await;
    let app = test::init_service(tessera_http::app(st)).await;
    let admin = Caller::new(&app, &acme.admin_key);
    let foreign = admin
        .with_key(&other.admin_key)
        .create("/tokens", card("/pci/"))
        .await;
    let unknown = uuid::Uuid::new_v4().to_string();
    let detail = |r: &tessera_testkit::api::Reply, id: &str| {
        r.body["detail"].as_str().expect("detail").replace(id, "ID")
    };
    let a = admin
        .post("/detokenize", json!({"n": format!("{{{{ {foreign} }}}}")}))
        .await
        .expect(400);
    let b = admin
        .post("/detokenize", json!({"n": format!("{{{{ {unknown} }}}}")}))
        .await
        .expect(400);
    assert_eq!(detail(&a, &foreign), detail(&b, &unknown));
    assert_eq!(detail(&a, &foreign), "token ID was not found");
    let r = admin
        .post(
            "/detokenize",
            json!({"card": {"n": format!("{{{{ {unknown} | nope }}}}")}}),
        )
        .await
        .expect(400);
    let detail = r.body["detail"].as_str().expect("detail");
    assert!(
        detail.contains("at byte") && detail.contains("body/card/n"),
        "{detail}"
    );
}

/// A destination-bound token goes only to its destinations; the caller is none: 403 naming it.
async fn destination_bound_tokens_are_refused(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = Caller::new(&app, &t.admin_key);
    let bound = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": "sk_live_x", "destinations": ["api.stripe.com"]}),
        )
        .await;
    let r = admin
        .post("/detokenize", json!({"k": format!("{{{{ {bound} }}}}")}))
        .await
        .expect(403);
    let detail = r.body["detail"].as_str().expect("detail");
    assert!(detail.contains(&bound), "{detail}");
    assert!(!String::from_utf8_lossy(&r.raw).contains("sk_live_x"));
}

/// At most 100 distinct tokens; a rendering that could pass 10 MiB is a 413 before anything is
/// decrypted; the body limit is a 413; a body that is not JSON is a 415.
async fn the_proxys_limits_apply(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = Caller::new(&app, &t.admin_key);
    let many: Vec<String> = (0..101)
        .map(|_| format!("{{{{ {} }}}}", uuid::Uuid::new_v4()))
        .collect();
    let r = admin.post("/detokenize", json!(many)).await.expect(400);
    assert!(r.body["detail"]
        .as_str()
        .is_some_and(|d| d.contains("at most 100")));
    let big = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": "x".repeat(8 * 1024)}),
        )
        .await;
    let copies: Vec<String> = (0..1500).map(|_| format!("{{{{ {big} }}}}")).collect();
    let r = admin.post("/detokenize", json!(copies)).await.expect(413);
    assert!(r.body["detail"]
        .as_str()
        .is_some_and(|d| d.contains("could expand")));
    let r = admin
        .post("/detokenize", json!("x".repeat(1024 * 1024)))
        .await
        .expect(413);
    assert!(r.body["detail"].is_string());
    let req = test::TestRequest::post()
        .uri("/detokenize")
        .insert_header(("SVC-API-KEY", t.admin_key.as_str()))
        .insert_header(("content-type", "text/plain"))
        .set_payload(format!("{{{{ {big} }}}}"));
    send_raw(&app, req).await.expect(415);
}

/// Filters that do not apply render `null` with a 200, whatever the token holds: a status
/// never tells one value from another.
async fn no_answer_depends_on_a_tokens_value(db: &TestDatabase) {
    let (app, t) = app_with_tenant(db, "acme").await;
    let admin = Caller::new(&app, &t.admin_key);
    let number = admin
        .create("/tokens", json!({"type": "token", "data": "1234"}))
        .await;
    let word = admin
        .create("/tokens", json!({"type": "token", "data": "abcd"}))
        .await;
    let object = admin
        .create("/tokens", json!({"type": "token", "data": {"a": 1}}))
        .await;
    let probe = |id: &str| {
        json!({
            "n": format!("{{{{ {id} | to_number }}}}"),
            "p": format!("{{{{ {id} | json: '$.a' }}}}"),
            "l": format!("{{{{ {id} | last4 }}}}")
        })
    };
    let r = admin.post("/detokenize", probe(&number)).await.expect(200);
    assert_eq!(r.body, json!({"n": 1234, "p": null, "l": "1234"}));
    let r = admin.post("/detokenize", probe(&word)).await.expect(200);
    assert_eq!(r.body, json!({"n": null, "p": null, "l": "abcd"}));
    let r = admin.post("/detokenize", probe(&object)).await.expect(200);
    assert_eq!(r.body, json!({"n": null, "p": 1, "l": null}));
    let method = Method::POST;
    let r = admin.send(method, "/detokenize", None).await.expect(415);
    assert!(r.body["detail"].is_string());
}
