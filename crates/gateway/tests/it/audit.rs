//! The gateway's audit events, on both backends: one `token.detokenized` per
//! invocation that substituted tokens, committed before the caller is answered; refused
//! invocations recorded with their reason (in the proxy's tenant's chain, or the deployment's
//! when the proxy key is unknown); and `req.svc` calls of transforms, once per call.

use http::Method;
use serde_json::json;
use tessera_domain::audit::ResourceId;
use tessera_domain::{
    audit::{AuditAction, AuditFilter, ChainedEvent, Outcome},
    ApplicationInput, PageRequest,
};
use tessera_testkit::{backend_tests, db::TestDatabase, gateway::Harness};

backend_tests!(
    a_detokenizing_invocation_is_recorded_once_with_its_tokens,
    an_invocation_without_tokens_records_nothing,
    refused_invocations_are_recorded_with_their_reason,
    an_unknown_proxy_key_is_recorded_in_the_deployment_chain,
    req_svc_calls_are_recorded_as_the_proxy_application,
);

/// The tenant's events, oldest first.
pub(crate) async fn events(g: &Harness) -> Vec<ChainedEvent> {
    let page = PageRequest::new(Some(1), Some(100)).expect("page");
    let mut items = g
        .vault
        .list_audit_events(&g.admin, &AuditFilter::default(), page)
        .await
        .expect("list")
        .items;
    items.reverse();
    items
}

/// The tenant's events of `action`, oldest first.
async fn of(g: &Harness, action: AuditAction) -> Vec<ChainedEvent> {
    events(g)
        .await
        .into_iter()
        .filter(|e| e.event.action == action)
        .collect()
}

fn uuid(s: &str) -> ResourceId {
    s.parse().expect("id")
}

async fn a_detokenizing_invocation_is_recorded_once_with_its_tokens(t: &TestDatabase) {
    let g = Harness::start(t).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    let user = g
        .vault
        .authenticate(Some(&key))
        .await
        .expect("key")
        .application_id();
    let (a, b) = (
        g.token(json!("first"), None).await,
        g.token(json!("second"), None).await,
    );
    let body = json!({"x": format!("{{{{{a}}}}}"), "y": format!("{{{{{b}}}}}"), "z": format!("{{{{{a}}}}}")});
    let r = g
        .call_keyed(
            Method::POST,
            "/proxy",
            (&pkey, &key),
            &[
                ("content-type", "application/json"),
                ("x-request-id", "req-detok-1"),
            ],
            &body.to_string(),
        )
        .await
        .expect(200);
    assert_eq!(r.sent_json()["x"], json!("first"));

    // Sync mode: the event is committed by the time the caller has the answer.
    let detokenized = of(&g, AuditAction::TokenDetokenized).await;
    assert_eq!(detokenized.len(), 1, "one event per invocation");
    let e = &detokenized[0].event;
    let mut ids = e.resource_ids.clone();
    ids.sort();
    let mut expected = vec![uuid(&a), uuid(&b)];
    expected.sort();
    assert_eq!(ids, expected, "each token once");
    assert_eq!(e.outcome, Outcome::Success);
    assert_eq!(e.actor.to_wire(), user.to_string());
    assert_eq!(e.tenant_id, Some(g.admin.tenant_id()));
    assert!(e.proxy_id.is_some());
    assert_eq!(e.request_id.as_deref(), Some("req-detok-1"));
    assert!(e.reason.is_none());
}

async fn an_invocation_without_tokens_records_nothing(t: &TestDatabase) {
    let g = Harness::start(t).await;
    let (key, pkey) = (g.use_key().await, g.plain_proxy().await);
    g.post_json(&pkey, Some(&key), r#"{"plain": true}"#)
        .await
        .expect(200);
    assert!(of(&g, AuditAction::TokenDetokenized).await.is_empty());
}

async fn refused_invocations_are_recorded_with_their_reason(t: &TestDatabase) {
    let g = Harness::start(t).await;
    let pkey = g.plain_proxy().await;
    let card = g.token(json!("in a container"), Some("/PCI/")).await;
    let body = json!({"x": format!("{{{{{card}}}}}")}).to_string();

    // A wrong API key: anonymous, in the proxy's tenant's chain.
    g.post_json(&pkey, Some("key_wrong"), &body)
        .await
        .expect(401);
    // A key without token:use anywhere.
    let reader = g
        .key(json!({"name": "r", "type": "private", "permissions": ["token:read"]}))
        .await;
    g.post_json(&pkey, Some(&reader), &body).await.expect(403);
    // A key with token:use in another container only: the refusal names the token.
    let elsewhere = g
        .key(json!({"name": "u", "type": "private", "permissions": [],
            "rules": [{"description": "other", "priority": 1, "container": "/other/", "permissions": ["token:use"]}]}))
        .await;
    g.post_json(&pkey, Some(&elsewhere), &body)
        .await
        .expect(403);

    let denied = of(&g, AuditAction::TokenDetokenized).await;
    assert_eq!(denied.len(), 3, "{denied:#?}");
    assert!(denied.iter().all(|e| e.event.outcome == Outcome::Denied
        && e.event.proxy_id.is_some()
        && e.event.reason.as_deref().is_some_and(|r| !r.is_empty())));
    assert_eq!(denied[0].event.actor.to_wire(), "anonymous");
    let reader_id = g
        .vault
        .authenticate(Some(&reader))
        .await
        .expect("key")
        .application_id();
    assert_eq!(denied[1].event.actor.to_wire(), reader_id.to_string());
    assert_eq!(denied[2].event.resource_ids, vec![uuid(&card)]);
}

async fn an_unknown_proxy_key_is_recorded_in_the_deployment_chain(t: &TestDatabase) {
    let g = Harness::start(t).await;
    g.post_json("key_nonexistent", None, "{}").await.expect(401);
    let deployment = t.audit_chain(None).await;
    assert_eq!(deployment.len(), 1);
    let e = &deployment[0].event;
    assert_eq!(
        (e.action, e.outcome, e.tenant_id, e.actor.to_wire()),
        (
            AuditAction::TokenDetokenized,
            Outcome::Denied,
            None,
            "anonymous".to_string()
        )
    );
    assert_eq!(e.reason.as_deref(), Some("the proxy key is unknown"));
    assert!(events(&g).await.is_empty(), "not in the tenant's chain");
}

/// A response transform tokenizing a card, then two tokens at once, trying a delete it may not
/// do, and reading the card back.
const TOKENIZE_CARD: &str = "module.exports = async (req) => {
  const token = await req.svc.tokenize({ type: 'card', data: { number: '4242424242424242' } });
  const both = await req.svc.tokenize([{ type: 'token', data: 'a' }, { type: 'token', data: 'b' }]);
  try { await req.svc.tokens.delete(token.id); } catch (err) {}
  await req.svc.tokens.retrieve(token.id);
  return { body: { card_token: token.id, both: both.map((t) => t.id) }, headers: req.args.headers };
};";

async fn req_svc_calls_are_recorded_as_the_proxy_application(t: &TestDatabase) {
    let g = Harness::start(t).await;
    let input: ApplicationInput = serde_json::from_value(
        json!({"name": "inbound", "type": "private", "permissions": ["token:create", "token:read"]}),
    )
    .expect("input");
    let app = g
        .vault
        .create_application(&g.admin, input)
        .await
        .expect("application")
        .application
        .id;
    let (proxy, pkey) = g
        .proxy(
            json!({"name": "inbound", "destination_url": g.upstream_url(), "require_auth": false,
            "application": {"id": app.to_string()}, "response_transform": {"code": TOKENIZE_CARD}}),
        )
        .await;
    let r = g
        .call(Method::POST, "/proxy", &[("svc-proxy-key", &pkey)], "")
        .await
        .expect(200);
    let card = uuid(r.body["card_token"].as_str().expect("card token"));
    let both: Vec<ResourceId> = r.body["both"]
        .as_array()
        .expect("both")
        .iter()
        .map(|v| uuid(v.as_str().expect("id")))
        .collect();

    let all = events(&g).await;
    let svc: Vec<_> = all
        .iter()
        .filter(|e| e.event.proxy_id.map(|p| p.to_string()) == Some(proxy.clone()))
        .map(|e| &e.event)
        .collect();
    let summary: Vec<(AuditAction, Outcome, Vec<ResourceId>)> = svc
        .iter()
        .map(|e| (e.action, e.outcome, e.resource_ids.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                AuditAction::TokenCreatedByTransform,
                Outcome::Success,
                vec![card.clone()]
            ),
            (AuditAction::TokenCreatedByTransform, Outcome::Success, both),
            (
                AuditAction::TokenDeleted,
                Outcome::Denied,
                vec![card.clone()]
            ),
            (
                AuditAction::TokenReadByTransform,
                Outcome::Success,
                vec![card]
            ),
        ]
    );
    assert!(svc.iter().all(|e| e.actor.to_wire() == app.to_string()));
    let request_id = r.header("x-request-id").expect("request id");
    assert!(svc
        .iter()
        .all(|e| e.request_id.as_deref() == Some(request_id)));
    assert!(
        svc[2]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("token:delete")),
        "{:?}",
        svc[2].reason
    );
    // An anonymous proxy substitutes nothing: no detokenization event.
    assert!(!all
        .iter()
        .any(|e| e.event.action == AuditAction::TokenDetokenized));
}
