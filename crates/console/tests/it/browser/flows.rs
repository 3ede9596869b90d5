//! Browser flows: sign-in, token search, masking and Reveal (with its audit event), audit
//! filters and Verify, sign-out and an expired session, a narrow key, a forged form.

use std::time::Duration;

use serde_json::json;
use tessera_domain::audit::{AuditAction, Outcome};
use tessera_testkit::{backend_tests, db::TestDatabase};

use super::{browse, browse_as_admin, browse_setup, browse_with_card, Tab};
use crate::support::{Setup, CARD};

backend_tests!(
    sign_in_with_a_bad_then_a_good_key,
    search_a_token_see_it_masked_and_reveal_it,
    audit_filters_and_verify,
    sign_out_and_an_expired_session,
    a_key_without_proxy_read_sees_not_permitted,
    a_forged_form_is_refused,
    every_field_is_labelled_and_the_keyboard_signs_in,
    a_mask_reader_sees_the_mask_and_no_reveal_and_redact_shows_nothing,
);

/// Signs in through the form.
pub(super) async fn sign_in(tab: &Tab, key: &str) {
    tab.go("/console").await;
    tab.type_into("#f-api-key", key).await;
    tab.click("form.signin button[type=submit]").await;
}

async fn sign_in_with_a_bad_then_a_good_key(db: &TestDatabase) {
    let Some(b) = browse(db, Duration::from_secs(60)).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.go("/console/tokens").await;
    assert_eq!(
        tab.path().await,
        "/console",
        "without a session: to sign-in"
    );
    let text = tab.text().await;
    assert!(text.contains("API key") && text.contains("Sign in"));
    tab.screenshot("sign-in").await;
    sign_in(tab, "key_00000000000000000000000000000000").await;
    let text = tab.text().await;
    assert!(
        text.contains("the API key is unknown or has been revoked"),
        "{text}"
    );
    let invalid = tab
        .eval("document.querySelector('#f-api-key').getAttribute('aria-invalid')")
        .await;
    assert_eq!(invalid, json!("true"), "the error is tied to the field");
    tab.screenshot("sign-in-error").await;
    sign_in(tab, &s.admin_key).await;
    assert_eq!(tab.path().await, "/console/tokens");
    let text = tab.text().await;
    for link in [
        "Tokens",
        "Proxies",
        "Applications",
        "Audit trail",
        "Sign out",
    ] {
        assert!(text.contains(link), "navigation: {link}");
    }
    let cookie_visible = tab.eval("document.cookie").await;
    assert_eq!(
        cookie_visible,
        json!(""),
        "HttpOnly: no script reads the session"
    );
    b.close().await;
}

async fn search_a_token_see_it_masked_and_reveal_it(db: &TestDatabase) {
    let Some((b, card)) = browse_with_card(db).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.type_into("#f-metadata", "customer=c_1").await;
    tab.click("form.search button[type=submit]").await;
    assert!(tab.path().await.contains("metadata=customer%3Dc_1"));
    assert!(tab.text().await.contains(&card), "found");
    assert!(
        !tab.html().await.contains(&CARD[..8]),
        "no card digits in the results"
    );
    tab.screenshot("tokens").await;
    tab.click(&format!("a[href='/console/tokens/{card}']"))
        .await;
    let text = tab.text().await;
    assert!(text.contains("•••• 1111") && text.contains("Reveal"));
    assert!(
        !tab.html().await.contains(&CARD[..8]),
        "masked until Reveal"
    );
    tab.screenshot("token-masked").await;
    tab.click("section.data button[type=submit]").await;
    assert!(tab.text().await.contains(CARD), "revealed");
    tab.screenshot("token-revealed").await;
    let read = s
        .events()
        .await
        .into_iter()
        .find(|e| e.event.action == AuditAction::TokenRead)
        .expect("Reveal leaves a token.read");
    assert_eq!(read.event.outcome, Outcome::Success);
    assert_eq!(read.event.resource_ids[0].to_string(), card);
    tab.go("/console/audit?action=token.read").await;
    let text = tab.text().await;
    assert!(
        text.contains("token.read") && text.contains(&card),
        "{text}"
    );
    b.close().await;
}

/// A key whose rule masks `/` sees the console's mask with no Reveal, and a forged Reveal (a
/// form posted with its own session's CSRF token) shows it no digit more; a key whose rule
/// redacts sees no data at all (docs/console.md, docs/api.md "Transforms").
async fn a_mask_reader_sees_the_mask_and_no_reveal_and_redact_shows_nothing(db: &TestDatabase) {
    let s = crate::support::Setup::start(db, Duration::from_secs(60)).await;
    let card = s.card().await;
    let rule = |transform: &str| {
        json!({"name": transform, "type": "private", "rules": [{"priority": 1, "container": "/",
            "transform": transform, "permissions": ["token:read", "token:search"]}]})
    };
    let masker = s.key(rule("mask")).await;
    let redactor = s.key(rule("redact")).await;
    let Some(b) = browse_setup(s).await else {
        return;
    };
    let tab = &b.tab;
    sign_in(tab, &masker).await;
    tab.go(&format!("/console/tokens/{card}")).await;
    let text = tab.text().await;
    assert!(
        text.contains("•••• 1111") && text.contains("masked"),
        "{text}"
    );
    assert_eq!(
        tab.eval("document.querySelector('section.data button') === null")
            .await,
        json!(true),
        "no Reveal offered"
    );
    assert!(
        !text.contains("Fingerprint"),
        "no fingerprint beside a mask"
    );
    tab.screenshot("token-mask-reader").await;
    let forged = format!(
        "(() => {{ const f = document.createElement('form'); f.method = 'post'; \
         f.action = '/console/tokens/{card}/reveal'; \
         f.appendChild(document.querySelector('input[name=csrf]').cloneNode()); \
         document.body.appendChild(f); f.submit(); return true; }})()"
    );
    tab.navigating(|| async {
        tab.eval(&forged).await;
    })
    .await;
    assert!(
        !tab.html().await.contains(&CARD[..8]),
        "a posted Reveal shows a mask reader no more"
    );
    assert!(tab.text().await.contains("•••• 1111"));
    tab.click("form.signout button[type=submit]").await;
    sign_in(tab, &redactor).await;
    tab.go(&format!("/console/tokens/{card}")).await;
    let text = tab.text().await;
    assert!(text.contains("redact") && !text.contains("1111"), "{text}");
    assert!(!tab.html().await.contains(&CARD[..8]));
    b.close().await;
}

async fn audit_filters_and_verify(db: &TestDatabase) {
    let Some(b) = browse_as_admin(db, Duration::from_secs(60)).await else {
        return;
    };
    let tab = &b.tab;
    tab.go("/console/tokens/new").await;
    tab.set("#f-type", "token").await;
    tab.eval("document.querySelector('#f-type').dispatchEvent(new Event('change'))")
        .await;
    tab.type_into("#f-data", "hello").await;
    tab.click("main form.stack button[type=submit]").await;
    assert!(tab.text().await.contains("Token created"));
    tab.go("/console/audit").await;
    tab.set("#f-action", "token.created").await;
    tab.set("#f-outcome", "success").await;
    tab.click("form.search button[type=submit]").await;
    let path = tab.path().await;
    assert!(
        path.contains("action=token.created") && path.contains("outcome=success"),
        "{path}"
    );
    let rows: Vec<String> = serde_json::from_value(
        tab.eval("Array.from(document.querySelectorAll('table.events tbody tr td:nth-child(2)')).map(td => td.innerText)")
            .await,
    )
    .expect("rows");
    assert!(
        !rows.is_empty() && rows.iter().all(|a| a == "token.created"),
        "{rows:?}"
    );
    tab.type_into("#f-from", "not a time").await;
    tab.click("form.search button[type=submit]").await;
    assert!(tab.text().await.contains("must be an RFC 3339 date-time"));
    tab.go("/console/audit").await;
    tab.click("section.verify button[type=submit]").await;
    let text = tab.text().await;
    assert!(text.contains("The chain holds."), "{text}");
    assert!(text.contains("Chain head") && text.contains("hash"));
    tab.screenshot("audit").await;
    b.close().await;
}

async fn sign_out_and_an_expired_session(db: &TestDatabase) {
    let Some(b) = browse_as_admin(db, Duration::from_millis(1500)).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    assert_eq!(s.console.stored_sessions().await, 1);
    tab.click("form.signout button[type=submit]").await;
    assert_eq!(tab.path().await, "/console?signed_out=1");
    assert!(tab.text().await.contains("You have signed out."));
    assert_eq!(s.console.stored_sessions().await, 0, "ended on the server");
    tab.go("/console/tokens").await;
    assert_eq!(tab.path().await, "/console");
    sign_in(tab, &s.admin_key).await;
    assert_eq!(tab.path().await, "/console/tokens");
    tokio::time::sleep(Duration::from_millis(1800)).await;
    tab.go("/console/proxies").await;
    assert_eq!(tab.path().await, "/console?expired=1");
    assert!(tab
        .text()
        .await
        .contains("Your session has ended. Sign in again."));
    b.close().await;
}

async fn a_key_without_proxy_read_sees_not_permitted(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let key = s
        .key(json!({"name": "reader", "type": "private", "permissions": ["token:read"]}))
        .await;
    let Some(b) = browse_setup(s).await else {
        return;
    };
    let tab = &b.tab;
    sign_in(tab, &key).await;
    tab.click("nav a[href='/console/proxies']").await;
    let text = tab.text().await;
    assert!(text.contains("Not permitted"), "{text}");
    assert!(text.contains("proxy:read"), "in the API's words");
    tab.screenshot("not-permitted").await;
    tab.go("/console/proxies/new").await;
    tab.type_into("#f-name", "p").await;
    tab.type_into("#f-destination-url", "https://example.com")
        .await;
    tab.click("main form.stack button[type=submit]").await;
    assert!(tab.text().await.contains("Not permitted"));
    b.close().await;
}

async fn a_forged_form_is_refused(db: &TestDatabase) {
    let Some((b, card)) = browse_with_card(db).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.go(&format!("/console/tokens/{card}")).await;
    tab.eval("document.querySelector('section.data input[name=csrf]').value = 'forged'")
        .await;
    tab.click("section.data button[type=submit]").await;
    let status = tab
        .eval("performance.getEntriesByType('navigation')[0].responseStatus")
        .await;
    assert_eq!(status, json!(403));
    let text = tab.text().await;
    assert!(text.contains("Form refused") && !text.contains(CARD));
    assert!(s
        .events()
        .await
        .iter()
        .all(|e| e.event.action != AuditAction::TokenRead));
    b.close().await;
}

/// Fields of the page that no label names (hidden inputs aside).
const UNLABELLED: &str = "Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea')).filter(e => !(e.labels && e.labels.length)).map(e => e.name)";

async fn every_field_is_labelled_and_the_keyboard_signs_in(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let card = s.card().await;
    let (proxy, _) = s
        .proxy(json!({"name": "p", "destination_url": s.harness.upstream_url()}))
        .await;
    let Some(b) = browse_setup(s).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.go("/console").await;
    let focused = tab.eval("document.activeElement === document.body").await;
    assert_eq!(focused, json!(true));
    // Keyboard only: the key field, typing, Enter.
    let field = tab.page.find_element("#f-api-key").await.expect("field");
    field.focus().await.expect("focus");
    field.type_str(&s.admin_key).await.expect("type");
    tab.navigating(|| async {
        field.press_key("Enter").await.expect("enter");
    })
    .await;
    assert_eq!(
        tab.path().await,
        "/console/tokens",
        "Enter submits the form"
    );
    for path in [
        "/console".to_string(),
        "/console/tokens".into(),
        "/console/tokens/new".into(),
        format!("/console/tokens/{card}/edit"),
        "/console/proxies".into(),
        "/console/proxies/new".into(),
        format!("/console/proxies/{proxy}"),
        "/console/applications/new".into(),
        "/console/audit".into(),
    ] {
        tab.go(&path).await;
        assert_eq!(tab.eval(UNLABELLED).await, json!([]), "{path}");
        let skip = tab
            .eval("document.querySelector('a.skip')?.getAttribute('href')")
            .await;
        assert!(
            path == "/console" || skip == json!("#main"),
            "{path}: a skip link"
        );
    }
    let outline = tab
        .eval("(() => { const b = document.querySelector('main button, main .button'); b.focus(); return getComputedStyle(b).outlineStyle; })()")
        .await;
    assert_eq!(outline, json!("solid"), "focus is visible");
    b.close().await;
}
