//! Console actions leave the API's audit events; proxies (compile check, key once, Try it
//! through the gateway) and applications (rules, key once, 409 explained).

use std::time::Duration;

use actix_web::http::StatusCode;
use serde_json::json;
use tessera_domain::{
    audit::{AuditAction, Outcome},
    ApplicationId, Permission, ProxyId,
};
use tessera_testkit::{backend_tests, db::TestDatabase};

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
};

use crate::support::{client, Client, Page, Setup, CARD};

backend_tests!(
    token_actions_leave_the_apis_audit_events,
    proxies_compile_check_and_key_once,
    try_it_goes_through_the_gateway_as_the_signed_in_application,
    applications_rules_and_key_once,
    an_application_in_use_is_not_deleted_and_says_why,
    proxies_are_listed_searched_and_deleted,
    without_a_gateway_try_it_says_it_is_unavailable,
    webhooks_are_listed_and_a_disabled_one_enabled,
);

fn id_in(location: &str, prefix: &str) -> String {
    location
        .strip_prefix(prefix)
        .and_then(|rest| rest.split(['?', '/']).next())
        .expect("an id in the location")
        .to_string()
}

/// The id in the first link of `body` that starts with `prefix`.
fn linked_id(body: &str, prefix: &str) -> String {
    let marker = format!("href=\"{prefix}");
    let start = body.find(&marker).expect("link") + marker.len();
    body[start..start + 36].to_string()
}

fn as_refs<'a>(pairs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The edit form of token `id` submitted with new metadata and expiry (and the hidden fields
/// the page carried).
async fn edit_token<S, B>(c: &mut Client<S>, csrf: &str, id: &str) -> Page
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let edit = c.get(&format!("/console/tokens/{id}/edit")).await;
    let mut form: Vec<(&'static str, String)> = vec![
        ("csrf", csrf.to_string()),
        ("metadata", "customer=c_10\nplan=gold".into()),
        ("expires_at", "2099-01-01T00:00:00Z".into()),
    ];
    for hidden in ["was_metadata", "was_expires_at"] {
        let marker = format!("name=\"{hidden}\" value=\"");
        let start = edit.body.find(&marker).expect("hidden field") + marker.len();
        let end = edit.body[start..].find('"').expect("end") + start;
        form.push((hidden, edit.body[start..end].replace("&#10;", "\n")));
    }
    c.post(&format!("/console/tokens/{id}/edit"), &as_refs(&form))
        .await
}

async fn token_actions_leave_the_apis_audit_events(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let bad = c
        .post(
            "/console/tokens/new",
            &[
                ("csrf", &csrf),
                ("type", "card"),
                ("data.number", "4111111111111112"),
            ],
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body.contains("id=\"e-data-number\""),
        "next to the number"
    );
    let created = c
        .post(
            "/console/tokens/new",
            &[
                ("csrf", &csrf),
                ("type", "card"),
                ("data.number", CARD),
                ("data.expiration_month", "12"),
                ("data.expiration_year", "2031"),
                ("metadata", "customer=c_9"),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.body);
    let id = id_in(created.location(), "/console/tokens/");
    let saved = edit_token(&mut c, &csrf, &id).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let token = s
        .vault()
        .get_token(&s.admin, id.parse().expect("id"))
        .await
        .expect("token");
    assert_eq!(token.metadata.get("plan").map(String::as_str), Some("gold"));
    assert!(token.expires_at.is_some());
    let gone = c
        .post(&format!("/console/tokens/{id}/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(gone.location(), format!("/console/tokens?deleted={id}"));
    let uuid: uuid::Uuid = id.parse().expect("uuid");
    let mine: Vec<_> = s
        .events()
        .await
        .into_iter()
        .filter(|e| e.event.resource_ids == vec![uuid])
        .collect();
    let actions: Vec<AuditAction> = mine.iter().map(|e| e.event.action).collect();
    let expected = [
        AuditAction::TokenDeleted,
        AuditAction::TokenUpdated,
        AuditAction::TokenCreated,
    ];
    assert_eq!(actions, expected, "newest first, as the API records them");
    for e in mine {
        assert_eq!(e.event.outcome, Outcome::Success);
        assert_eq!(
            e.event.actor.to_wire(),
            s.admin.application_id().to_string()
        );
        assert!(e.event.request_id.is_some());
    }
}

fn proxy_form(csrf: &str, upstream: &str, code: &str) -> Vec<(&'static str, String)> {
    vec![
        ("csrf", csrf.to_string()),
        ("name", "echo".to_string()),
        ("destination_url", upstream.to_string()),
        ("require_auth", "on".into()),
        ("config.0.key", "API_KEY".into()),
        ("config.0.value", "sk_test".into()),
        ("request_transform", code.to_string()),
        ("response_transform", String::new()),
    ]
}

const BROKEN: &str = "module.exports = async function (req) {\n  return { body: req.args.body, headers: req.args.headers ;\n};";
const FIXED: &str = "module.exports = async function (req) {\n  return { body: req.args.body, headers: req.args.headers };\n};";

async fn proxies_compile_check_and_key_once(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let upstream = s.harness.upstream_url();
    let refused = c
        .post(
            "/console/proxies/new",
            &as_refs(&proxy_form(&csrf, &upstream, BROKEN)),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.body.contains("id=\"e-request-transform-code\""));
    assert!(refused.body.contains("does not compile"));
    assert!(refused.body.contains("(line 2)"), "the line is named");
    assert!(
        refused.body.contains("sk_test"),
        "the form is shown again as it was"
    );
    let created = c
        .post(
            "/console/proxies/new",
            &as_refs(&proxy_form(&csrf, &upstream, FIXED)),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id: ProxyId = linked_id(&created.body, "/console/proxies/")
        .parse()
        .expect("id");
    let proxy = s.vault().get_proxy(&s.admin, id).await.expect("proxy");
    let key = proxy.key.expose().as_str();
    assert!(created.body.contains(key), "the key, once");
    let page = c.get(&format!("/console/proxies/{id}")).await;
    assert!(!page.body.contains(key), "never again");
    assert!(page.body.contains(">Save<"));
    let actions: Vec<_> = s.events().await.iter().map(|e| e.event.action).collect();
    assert_eq!(
        actions,
        vec![AuditAction::ProxyCreated],
        "the refused form did nothing"
    );
}

async fn try_it_goes_through_the_gateway_as_the_signed_in_application(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let card = s.card().await;
    let (proxy, _) = s
        .proxy(json!({"name": "echo", "destination_url": s.harness.upstream_url()}))
        .await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let body = format!("{{\"card\": \"{{{{ {card} | json: '$.number' }}}}\"}}");
    let tried = c
        .post(
            &format!("/console/proxies/{proxy}/try"),
            &[
                ("csrf", &csrf),
                ("method", "POST"),
                ("path", "/charges"),
                ("content_type", "application/json"),
                ("headers", "X-Trace: 7"),
                ("body", &body),
            ],
        )
        .await;
    assert_eq!(tried.status, StatusCode::OK, "{}", tried.body);
    assert!(tried.body.contains("svc-proxy-destination-status: 200"));
    assert!(
        tried.body.contains(CARD),
        "the destination received the detokenized card"
    );
    assert_eq!(s.harness.upstream.hits(), 1);
    let detokenized = s
        .events()
        .await
        .into_iter()
        .find(|e| e.event.action == AuditAction::TokenDetokenized)
        .expect("the gateway recorded its detokenization");
    assert_eq!(
        detokenized.event.actor.to_wire(),
        s.admin.application_id().to_string()
    );
    let steered = c
        .post(
            &format!("/console/proxies/{proxy}/try"),
            &[
                ("csrf", &csrf),
                ("method", "POST"),
                ("path", "/x"),
                ("headers", "SVC-API-KEY: key_x"),
            ],
        )
        .await;
    assert_eq!(steered.status, StatusCode::BAD_REQUEST);
    assert!(steered.body.contains("cannot be set here"));
    assert_eq!(s.harness.upstream.hits(), 1, "nothing was sent");
}

async fn applications_rules_and_key_once(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let created = c
        .post(
            "/console/applications/new",
            &[
                ("csrf", &csrf),
                ("name", "checkout"),
                ("type", "private"),
                ("permissions", "token:create"),
                ("rule.0.priority", "2"),
                ("rule.0.container", "/pci/"),
                ("rule.0.permissions", "token:use"),
                ("rule.1.priority", "1"),
                ("rule.1.container", "/pci/high/"),
                ("rule.1.permissions", "token:read"),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert!(created.body.contains("key_"), "the key, once");
    let id: ApplicationId = linked_id(&created.body, "/console/applications/")
        .parse()
        .expect("id");
    assert_eq!(
        s.vault()
            .get_application(&s.admin, id)
            .await
            .expect("app")
            .rules
            .len(),
        2
    );
    let page = c.get(&format!("/console/applications/{id}")).await;
    let (high, pci) = (
        page.body.find("/pci/high/"),
        page.body.find("value=\"/pci/\""),
    );
    assert!(high < pci, "rules in priority order");
    let mut form = vec![
        ("csrf", csrf.as_str()),
        ("name", "checkout"),
        ("type", "private"),
        ("rule.0.priority", "1"),
        ("rule.0.container", "no-slash"),
        ("rule.0.permissions", "token:read"),
    ];
    let bad = c.post(&format!("/console/applications/{id}"), &form).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body.contains("id=\"e-rules-0--container\""),
        "{}",
        bad.body
    );
    form[4] = ("rule.0.container", "/bank/");
    form.push(("permissions", "token:create"));
    let saved = c.post(&format!("/console/applications/{id}"), &form).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let app = s.vault().get_application(&s.admin, id).await.expect("app");
    assert_eq!(app.rules.len(), 1);
    assert_eq!(app.rules[0].permissions, vec![Permission::TokenRead]);
    let regenerated = c
        .post(
            &format!("/console/applications/{id}/regenerate"),
            &[("csrf", &csrf)],
        )
        .await;
    assert!(regenerated.body.contains("the old one no longer works"));
    assert!(regenerated.body.contains("key_"));
}

async fn an_application_in_use_is_not_deleted_and_says_why(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let app = s
        .key(json!({"name": "svc", "type": "private", "permissions": ["token:read"]}))
        .await;
    let id = s
        .vault()
        .authenticate(Some(&app))
        .await
        .expect("app")
        .application_id();
    let (proxy, _) = s
        .proxy(
            json!({"name": "uses-it", "destination_url": s.harness.upstream_url(),
                   "application": {"id": id.to_string()}}),
        )
        .await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let confirm = c.get(&format!("/console/applications/{id}/delete")).await;
    assert!(confirm.body.contains("Delete application"));
    let refused = c
        .post(
            &format!("/console/applications/{id}/delete"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.body.contains("used by proxies") && refused.body.contains("uses-it"));
    assert!(
        s.vault().get_application(&s.admin, id).await.is_ok(),
        "still there"
    );
    c.post(
        &format!("/console/proxies/{proxy}/delete"),
        &[("csrf", &csrf)],
    )
    .await;
    let deleted = c
        .post(
            &format!("/console/applications/{id}/delete"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(
        deleted.location(),
        format!("/console/applications?deleted={id}")
    );
    let after = c.get(deleted.location()).await;
    assert!(
        after.body.contains("was deleted")
            && !after
                .body
                .contains(&format!("href=\"/console/applications/{id}\""))
    );
    let actions: Vec<_> = s.events().await.iter().map(|e| e.event.action).collect();
    assert_eq!(
        actions[..2],
        [AuditAction::ApplicationDeleted, AuditAction::ProxyDeleted]
    );
}

async fn proxies_are_listed_searched_and_deleted(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let upstream = s.harness.upstream_url();
    let (stripe, _) = s
        .proxy(json!({"name": "Stripe charges", "destination_url": upstream}))
        .await;
    let (adyen, _) = s
        .proxy(json!({"name": "adyen", "destination_url": upstream}))
        .await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let all = c.get("/console/proxies").await;
    assert!(all.body.contains(&stripe) && all.body.contains(&adyen));
    let found = c.get("/console/proxies?name=str*charges").await;
    assert!(
        found.body.contains(&stripe) && !found.body.contains(&adyen),
        "case-insensitive, * wildcard"
    );
    let confirm = c.get(&format!("/console/proxies/{adyen}/delete")).await;
    assert!(confirm.body.contains("Its key stops working at once"));
    let gone = c
        .post(
            &format!("/console/proxies/{adyen}/delete"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(gone.location(), format!("/console/proxies?deleted={adyen}"));
    assert_eq!(
        c.get(&format!("/console/proxies/{adyen}")).await.status,
        StatusCode::NOT_FOUND
    );
    let event = s.events().await.into_iter().next().expect("an event");
    assert_eq!(event.event.action, AuditAction::ProxyDeleted);
    assert_eq!(
        event.event.resource_ids,
        vec![adyen.parse::<uuid::Uuid>().expect("uuid")]
    );
}

async fn without_a_gateway_try_it_says_it_is_unavailable(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let (proxy, _) = s
        .proxy(json!({"name": "p", "destination_url": s.harness.upstream_url()}))
        .await;
    let console =
        tessera_console::Console::new(s.vault().clone(), tessera_console::ConsoleConfig::default());
    let mut c = crate::support::client_of(&console).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let page = c.get(&format!("/console/proxies/{proxy}")).await;
    assert!(page.body.contains("Try it is unavailable"));
    let tried = c
        .post(
            &format!("/console/proxies/{proxy}/try"),
            &[("csrf", &csrf), ("method", "POST"), ("body", "{}")],
        )
        .await;
    assert_eq!(tried.status, StatusCode::OK);
    assert!(tried.body.contains("Try it is unavailable"));
    assert_eq!(s.harness.upstream.hits(), 0, "nothing was sent");
}

/// The Webhooks page lists the tenant's webhooks with their status; a disabled one is enabled
/// by its button (CSRF-checked, audited as the API's `PUT` is); a key without `webhook:read`
/// sees nothing of them.
async fn webhooks_are_listed_and_a_disabled_one_enabled(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let input: tessera_domain::webhook::WebhookInput = serde_json::from_value(json!({
        "name": "orders-hook", "url": "https://hooks.example.com/in",
        "events": ["token.created"], "status": "disabled"}))
    .expect("input");
    let hook = s
        .vault()
        .create_webhook(&s.admin, input)
        .await
        .expect("webhook")
        .webhook
        .id;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let list = c.get("/console/webhooks").await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(
        list.body.contains("orders-hook") && list.body.contains("https://hooks.example.com/in")
    );
    assert!(list.body.contains("disabled"));
    let forged = c
        .post(
            &format!("/console/webhooks/{hook}/enable"),
            &[("csrf", "forged")],
        )
        .await;
    assert_ne!(
        forged.status,
        StatusCode::SEE_OTHER,
        "a forged form enables nothing"
    );
    let enabled = c
        .post(
            &format!("/console/webhooks/{hook}/enable"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(
        enabled.location(),
        format!("/console/webhooks?enabled={hook}")
    );
    let stored = s
        .vault()
        .get_webhook(&s.admin, hook)
        .await
        .expect("webhook");
    assert_eq!(
        stored.webhook.status,
        tessera_domain::webhook::WebhookStatus::Enabled
    );
    let event = s.events().await.into_iter().next().expect("an event");
    assert_eq!(event.event.action, AuditAction::WebhookUpdated);

    let reader = s
        .key(json!({"name": "reader", "type": "management", "permissions": ["proxy:read"]}))
        .await;
    let mut r = client(&s).await;
    r.signed_in(&reader).await;
    let refused = r.get("/console/webhooks").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(!refused.body.contains("orders-hook"));
}
