//! A destination-bound token read by a transform through `req.svc` goes only to the proxy's
//! destination (docs/api.md, "Brokering credentials"): a response transform may not read it; a
//! request transform that did may forward it but not answer the caller itself (custom
//! response, thrown error, refused header); its warm context does not keep it for a later
//! call; it may not copy it into a new token; and the refusals are in the audit trail. In both
//! isolation modes, on both backends.

use serde_json::{json, Value};
use tessera_domain::audit::{AuditAction, ChainedEvent, Outcome};
use tessera_testkit::{
    db::TestDatabase,
    gateway::{Harness, Isolation, Reply},
    isolation_backend_tests,
};

use crate::audit::events;

isolation_backend_tests!(
    a_response_transform_cannot_read_a_bound_token,
    a_request_transform_that_read_a_bound_token_cannot_answer_with_a_custom_response,
    a_request_transform_that_read_a_bound_token_cannot_throw_its_value,
    a_request_transform_still_forwards_a_bound_token_to_its_destination,
    a_warm_context_does_not_keep_a_bound_value,
    no_token_is_created_after_a_bound_read,
    refusals_of_bound_reads_are_audited,
);

/// An anonymous proxy to the upstream whose application holds `token:read` and
/// `token:create`, with `code` as its `stage` (`request` or `response`) transform, and a token
/// bound to the upstream's host (`127.0.0.1`) whose id is its configuration's `TOKEN`.
struct Setup {
    proxy: String,
    pkey: String,
    token: String,
    secret: String,
}

async fn setup(g: &Harness, stage: &str, code: &str) -> Setup {
    let key = g
        .key(json!({"name": "reader", "type": "private",
                    "permissions": ["token:read", "token:create"]}))
        .await;
    let app = g.vault.authenticate(Some(&key)).await.expect("application");
    let secret = format!("s3cret-{}", uuid::Uuid::new_v4().simple());
    let token = g
        .bound_token(json!(secret), None, Some(&["127.0.0.1"]))
        .await;
    let (proxy, pkey) = g
        .proxy(json!({
            "name": "bound reader", "destination_url": g.upstream_url(), "require_auth": false,
            "application": {"id": app.application_id().to_string()},
            "configuration": {"TOKEN": token},
            format!("{stage}_transform"): {"code": code},
        }))
        .await;
    Setup {
        proxy,
        pkey,
        token,
        secret,
    }
}

/// `POST /proxy` through the proxy with the JSON `body` and no API key.
async fn call(g: &Harness, s: &Setup, body: Value) -> Reply {
    g.post_json(&s.pkey, None, &body.to_string()).await
}

/// Asserts that the secret is nowhere in the answer: body or headers.
fn absent(r: &Reply, s: &Setup) {
    assert!(
        !r.body.to_string().contains(&s.secret),
        "leaked: {}",
        r.body
    );
    for (name, value) in &r.headers {
        assert!(
            !String::from_utf8_lossy(value.as_bytes()).contains(&s.secret),
            "leaked in {name}"
        );
    }
}

/// Asserts the generic failure of a transform whose own answer was withheld.
fn withheld(r: Reply, s: &Setup) {
    absent(&r, s);
    let r = r.proxy_error(500);
    assert!(r.detail().contains("withheld"), "{}", r.detail());
    assert!(r.body["proxy_error"].get("errors").is_none(), "{}", r.body);
}

/// Asserts that each of `bodies` sent through the proxy is [`withheld`], and that nothing
/// reached the destination.
async fn all_withheld(g: &Harness, s: &Setup, bodies: impl IntoIterator<Item = Value>) {
    let hits = g.upstream.hits();
    for body in bodies {
        withheld(call(g, s, body).await, s);
    }
    assert_eq!(g.upstream.hits(), hits, "nothing was forwarded");
}

/// The gateway in `mode` over `db`, with the [`Setup`] of `code` as its `stage` transform.
async fn started(db: &TestDatabase, mode: Isolation, stage: &str, code: &str) -> (Harness, Setup) {
    let g = Harness::start_in(db, mode).await;
    let s = setup(&g, stage, code).await;
    (g, s)
}

async fn a_response_transform_cannot_read_a_bound_token(db: &TestDatabase, mode: Isolation) {
    let code = "module.exports = async (req) => {
      let got;
      try { got = (await req.svc.tokens.retrieve(req.configuration.TOKEN)).data; }
      catch (e) { return { body: { refused: e.status, why: e.message } }; }
      return { body: 'LEAK ' + got };
    };";
    let (g, s) = started(db, mode, "response", code).await;
    let r = call(&g, &s, json!({})).await.expect(200);
    absent(&r, &s);
    assert_eq!(r.body["refused"], 403, "{}", r.body);
    let why = r.body["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("cannot be read in a response transform"),
        "{why}"
    );
    // Left uncaught, the refusal fails the transform: still without the value.
    let uncaught = "module.exports = async (req) => {
      const t = await req.svc.tokens.retrieve(req.configuration.TOKEN);
      return { body: 'LEAK ' + t.data };
    };";
    let s = setup(&g, "response", uncaught).await;
    let r = call(&g, &s, json!({})).await;
    absent(&r, &s);
    r.proxy_error(500);
}

async fn a_request_transform_that_read_a_bound_token_cannot_answer_with_a_custom_response(
    db: &TestDatabase,
    mode: Isolation,
) {
    let code = "module.exports = async (req) => {
      const t = await req.svc.tokens.retrieve(req.configuration.TOKEN);
      throw new CustomHttpResponseError({ status: 200, headers: { 'x-leak': t.data },
                                          body: 'LEAK ' + t.data });
    };";
    let (g, s) = started(db, mode, "request", code).await;
    all_withheld(&g, &s, [json!({})]).await;
}

async fn a_request_transform_that_read_a_bound_token_cannot_throw_its_value(
    db: &TestDatabase,
    mode: Isolation,
) {
    let code = "module.exports = async (req) => {
      const v = (await req.svc.tokens.retrieve(req.configuration.TOKEN)).data;
      class Mine extends Error {}
      switch (req.args.body.how) {
        case 'error': throw new Error(v);
        case 'bad_request': throw new BadRequestError(v);
        case 'forbidden': throw new AuthorizationError('no: ' + v);
        case 'own_class': throw new Mine(v);
        case 'string': throw v;
        case 'header_name': return { headers: { ['x ' + v]: '1' } };
        case 'header_value': return { headers: { [v]: '\\n' } };
        default: return 'not an object: ' + v;
      }
    };";
    let (g, s) = started(db, mode, "request", code).await;
    let hows = [
        "error",
        "bad_request",
        "forbidden",
        "own_class",
        "string",
        "header_name",
        "header_value",
        "not_an_object",
    ];
    all_withheld(&g, &s, hows.map(|how| json!({ "how": how }))).await;
}

async fn a_request_transform_still_forwards_a_bound_token_to_its_destination(
    db: &TestDatabase,
    mode: Isolation,
) {
    let code = "module.exports = async (req) => {
      const t = await req.svc.tokens.retrieve(req.configuration.TOKEN);
      const headers = Object.assign({}, req.args.headers, { authorization: 'Bearer ' + t.data });
      return { body: req.args.body, headers };
    };";
    let (g, s) = started(db, mode, "request", code).await;
    // Twice: the second call runs in a fresh context and is allowed alike.
    for _ in 0..2 {
        let r = call(&g, &s, json!({"amount": 1})).await.expect(200);
        assert_eq!(
            r.echoed()["headers"]["authorization"],
            format!("Bearer {}", s.secret),
            "the destination received the value"
        );
        assert_eq!(r.sent_json(), json!({"amount": 1}));
    }
}

async fn a_warm_context_does_not_keep_a_bound_value(db: &TestDatabase, mode: Isolation) {
    let code = "module.exports = async (req) => {
      if (req.args.body.step === 'read') {
        globalThis.kept = (await req.svc.tokens.retrieve(req.configuration.TOKEN)).data;
        globalThis.calls = 1;
        return { body: { stored: true } };
      }
      globalThis.calls = (globalThis.calls || 0) + 1;
      throw new CustomHttpResponseError({ status: 200,
        body: { kept: globalThis.kept === undefined ? null : globalThis.kept, calls: globalThis.calls } });
    };";
    let (g, s) = started(db, mode, "request", code).await;
    let r = call(&g, &s, json!({"step": "read"})).await.expect(200);
    absent(&r, &s);
    let r = call(&g, &s, json!({"step": "tell"})).await.expect(200);
    absent(&r, &s);
    assert_eq!(r.body, json!({"kept": null, "calls": 1}), "a fresh context");
    // Without a bound read the context stays warm.
    let r = call(&g, &s, json!({"step": "tell"})).await.expect(200);
    assert_eq!(r.body, json!({"kept": null, "calls": 2}), "still warm");
}

async fn no_token_is_created_after_a_bound_read(db: &TestDatabase, mode: Isolation) {
    let code = "module.exports = async (req) => {
      const before = await req.svc.tokenize({ type: 'token', data: 'before' });
      const t = await req.svc.tokens.retrieve(req.configuration.TOKEN);
      const attempt = async (f) => {
        try { return { created: (await f()).id }; }
        catch (e) { return { refused: e.status, why: e.message }; }
      };
      const tokenize = await attempt(() => req.svc.tokenize({ type: 'token', data: t.data }));
      const many = await attempt(() => req.svc.tokenize([{ type: 'token', data: t.data }]));
      const create = await attempt(() => req.svc.tokens.create({ type: 'token', data: t.data }));
      return { body: { before: before.id, tokenize, many, create } };
    };";
    let (g, s) = started(db, mode, "request", code).await;
    let r = call(&g, &s, json!({})).await.expect(200);
    let sent = r.sent_json();
    assert!(
        sent["before"].is_string(),
        "allowed before the read: {sent}"
    );
    for call in ["tokenize", "many", "create"] {
        assert_eq!(sent[call]["refused"], 403, "{call}: {sent}");
        assert!(sent[call].get("created").is_none(), "{call}: {sent}");
        let why = sent[call]["why"].as_str().unwrap_or_default();
        assert!(why.contains("destination-bound"), "{call}: {why}");
    }
}

/// The events of the proxy `proxy`, oldest first.
async fn events_of(g: &Harness, proxy: &str) -> Vec<ChainedEvent> {
    let mut items = events(g).await;
    items.retain(|e| e.event.proxy_id.map(|p| p.to_string()).as_deref() == Some(proxy));
    items
}

/// `(action, outcome, ids, reason)` of each event.
type Summary = Vec<(AuditAction, Outcome, Vec<String>, String)>;

fn summary(events: &[ChainedEvent]) -> Summary {
    events
        .iter()
        .map(|e| {
            (
                e.event.action,
                e.event.outcome,
                e.event
                    .resource_ids
                    .iter()
                    .map(|id| id.to_string())
                    .collect(),
                e.event.reason.clone().unwrap_or_default(),
            )
        })
        .collect()
}

async fn refusals_of_bound_reads_are_audited(db: &TestDatabase, mode: Isolation) {
    let g = Harness::start_in(db, mode).await;
    // A response transform's read is refused.
    let read = "module.exports = async (req) => {
      try { await req.svc.tokens.retrieve(req.configuration.TOKEN); } catch (e) {}
      return {};
    };";
    let s = setup(&g, "response", read).await;
    call(&g, &s, json!({})).await.expect(200);
    let events = summary(&events_of(&g, &s.proxy).await);
    assert_eq!(events.len(), 1, "{events:?}");
    let (action, outcome, ids, reason) = &events[0];
    assert_eq!(
        (*action, *outcome, ids.clone()),
        (
            AuditAction::TokenReadByTransform,
            Outcome::Denied,
            vec![s.token.clone()]
        )
    );
    assert!(reason.contains("response transform"), "{reason}");

    // A request transform's read is allowed; its copy and its own answer are refused.
    let answer = "module.exports = async (req) => {
      const t = await req.svc.tokens.retrieve(req.configuration.TOKEN);
      try { await req.svc.tokenize({ type: 'token', data: t.data }); } catch (e) {}
      throw new BadRequestError(t.data);
    };";
    let s = setup(&g, "request", answer).await;
    withheld(call(&g, &s, json!({})).await, &s);
    let events = summary(&events_of(&g, &s.proxy).await);
    let kinds: Vec<_> = events.iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(
        kinds,
        vec![
            (AuditAction::TokenReadByTransform, Outcome::Success),
            (AuditAction::TokenCreatedByTransform, Outcome::Denied),
            (AuditAction::TokenReadByTransform, Outcome::Denied),
        ],
        "{events:?}"
    );
    assert!(events[1].3.contains("destination-bound"), "{events:?}");
    assert_eq!(events[2].2, vec![s.token.clone()]);
    assert!(events[2].3.contains("withheld"), "{events:?}");
    assert!(
        events.iter().all(|e| !e.3.contains(&s.secret)),
        "{events:?}"
    );
}
