//! A newcomer's first hour, in the browser: `/` leads to the console, the new-token form
//! shows only the chosen type's fields, a card typed with spaces is taken and a refused form
//! keeps what it may, a proxy's key can be shown again, Try it inserts a recent token, and
//! applications are shown by name.

use std::time::Duration;

use serde_json::{json, Value};
use tessera_domain::{NewToken, TokenType};
use tessera_testkit::{backend_tests, db::TestDatabase};

use super::{browse, browse_as_admin, browse_setup, browse_with_card, flows::sign_in, Tab};
use crate::support::{Setup, CARD};

backend_tests!(
    the_root_leads_to_the_console,
    the_new_token_form_shows_only_the_chosen_type,
    a_spaced_card_number_is_taken_and_a_refused_form_keeps_the_rest,
    a_proxys_key_is_shown_again_on_its_page,
    try_it_inserts_a_recent_token_at_the_placeholder_and_the_caret,
    applications_are_shown_by_name,
);

async fn the_root_leads_to_the_console(db: &TestDatabase) {
    let Some(b) = browse(db, Duration::from_secs(60)).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.go("/").await;
    assert_eq!(tab.path().await, "/console", "to the sign-in page");
    assert!(tab.text().await.contains("Sign in"));
    tab.go("/elsewhere").await;
    assert_eq!(tab.path().await, "/elsewhere", "no redirect");
    assert!(
        tab.text().await.contains("Not found"),
        "{}",
        tab.text().await
    );
    sign_in(tab, &s.admin_key).await;
    tab.go("/").await;
    assert_eq!(tab.path().await, "/console/tokens", "signed in: the tokens");
    b.close().await;
}

/// For each type's fieldset of the token form: how many of its fields are rendered (take
/// room on the page), and whether the fieldset itself is displayed.
const SHOWN: &str = "Object.fromEntries(['card', 'bank', 'token'].map(t => {\
    const set = document.querySelector(`[data-token-type='${t}']`);\
    const fields = Array.from(set.querySelectorAll('input, textarea'))\
        .filter(e => e.offsetParent !== null && e.getClientRects().length > 0).length;\
    return [t, [fields, getComputedStyle(set).display !== 'none']];\
}))";

/// Chooses `value` in the token form's type select, as a user does (a `change` event).
async fn choose_type(tab: &Tab, value: &str) {
    tab.eval(&format!(
        "(() => {{ const s = document.querySelector('#f-type'); s.value = '{value}'; s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()"
    ))
    .await;
}

async fn the_new_token_form_shows_only_the_chosen_type(db: &TestDatabase) {
    let Some(b) = browse_as_admin(db, Duration::from_secs(60)).await else {
        return;
    };
    let tab = &b.tab;
    tab.go("/console/tokens/new").await;
    let card = json!({"card": [4, true], "bank": [0, false], "token": [0, false]});
    assert_eq!(tab.eval(SHOWN).await, card, "a card at first");
    tab.screenshot("token-new").await;
    choose_type(tab, "bank").await;
    assert_eq!(
        tab.eval(SHOWN).await,
        json!({"card": [0, false], "bank": [2, true], "token": [0, false]})
    );
    choose_type(tab, "token").await;
    assert_eq!(
        tab.eval(SHOWN).await,
        json!({"card": [0, false], "bank": [0, false], "token": [2, true]})
    );
    choose_type(tab, "card").await;
    assert_eq!(tab.eval(SHOWN).await, card, "and back");
    b.close().await;
}

/// Fills the card fields of the new-token form.
async fn fill_card(tab: &Tab, number: &str, month: &str) {
    tab.type_into("#f-data-number", number).await;
    tab.type_into("#f-data-expiration-month", month).await;
    tab.type_into("#f-data-expiration-year", "2031").await;
    tab.type_into("#f-data-cvc", "737").await;
}

async fn a_spaced_card_number_is_taken_and_a_refused_form_keeps_the_rest(db: &TestDatabase) {
    let Some(b) = browse_as_admin(db, Duration::from_secs(60)).await else {
        return;
    };
    let tab = &b.tab;
    tab.go("/console/tokens/new").await;
    fill_card(tab, "4111 1111 1111 1111", "12").await;
    tab.click("main form.stack button[type=submit]").await;
    assert!(
        tab.path().await.ends_with("?created=1"),
        "{}",
        tab.path().await
    );
    let text = tab.text().await;
    assert!(
        text.contains("Token created") && text.contains("•••• 1111"),
        "{text}"
    );

    tab.go("/console/tokens/new").await;
    fill_card(tab, "4111-1111-1111-1111", "13").await;
    tab.type_into("#f-metadata", "customer=c_9").await;
    tab.type_into("#f-containers-0-", "/pci/newcomer/").await;
    tab.click("main form.stack button[type=submit]").await;
    assert!(tab.text().await.contains("There is a problem"));
    let values = tab
        .eval("['number', 'expiration-month', 'expiration-year', 'cvc'].map(f => document.querySelector('#f-data-' + f).value).concat([document.querySelector('#f-metadata').value, document.querySelector('#f-containers-0-').value])")
        .await;
    assert_eq!(
        values,
        json!(["", "13", "2031", "", "customer=c_9", "/pci/newcomer/"]),
        "all kept but the number and the CVC"
    );
    let html = tab.html().await;
    assert!(
        !html.contains("4111-1111") && !html.contains(&CARD[..8]),
        "the number is never sent back"
    );
    // The CVC as a value, not as three digits inside an id.
    assert!(
        !html.contains("\"737\"") && !html.contains(">737<"),
        "nor the CVC"
    );
    assert_eq!(
        tab.eval(SHOWN).await,
        json!({"card": [4, true], "bank": [0, false], "token": [0, false]}),
        "still only the card"
    );
    tab.screenshot("token-new-refused").await;
    b.close().await;
}

async fn a_proxys_key_is_shown_again_on_its_page(db: &TestDatabase) {
    let Some(b) = browse_as_admin(db, Duration::from_secs(60)).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    let (id, key) = s
        .proxy(json!({"name": "payments", "destination_url": s.harness.upstream_url()}))
        .await;
    tab.go(&format!("/console/proxies/{id}")).await;
    assert!(!tab.html().await.contains(&key), "not until asked for");
    let said = tab
        .eval("document.querySelector('section.key').innerText")
        .await;
    let said = said.as_str().unwrap_or_default();
    assert!(
        said.contains("SVC-PROXY-KEY")
            && said.contains("proxy:read")
            && said.contains("Keep it secret"),
        "{said}"
    );
    tab.click("section.key button[type=submit]").await;
    let shown = tab
        .eval("document.querySelector('#proxy-key').textContent")
        .await;
    assert_eq!(shown, json!(key), "shown again, with a copy button");
    assert!(tab.text().await.contains("Copy"));
    tab.eval("document.querySelector('#key').scrollIntoView()")
        .await;
    tab.screenshot("proxy-key-again").await;
    b.close().await;
}

/// Clicks the Insert button of token `id` (no navigation).
async fn insert(tab: &Tab, id: &str) {
    let clicked = tab
        .eval(&format!(
            "(() => {{ const b = document.querySelector(\"button[data-insert*='{id}']\"); if (!b || b.hidden) return false; b.click(); return true; }})()"
        ))
        .await;
    assert_eq!(
        clicked,
        json!(true),
        "an Insert button for {id}, shown by the script"
    );
}

async fn try_it_inserts_a_recent_token_at_the_placeholder_and_the_caret(db: &TestDatabase) {
    let Some((b, card)) = browse_with_card(db).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    let note = s
        .vault()
        .create_token(&s.admin, NewToken::new(TokenType::Token, json!("hello")))
        .await
        .expect("token")
        .id
        .to_string();
    let (proxy, _) = s
        .proxy(json!({"name": "echo", "destination_url": s.harness.upstream_url()}))
        .await;
    tab.go(&format!("/console/proxies/{proxy}")).await;
    let listed = tab
        .eval("Array.from(document.querySelectorAll('.recent-token')).map(row => row.innerText)")
        .await;
    let listed: Vec<String> = serde_json::from_value(listed).expect("list");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed
        .iter()
        .any(|l| l.contains(&card) && l.contains("•••• 1111") && l.contains("card")));
    assert!(listed
        .iter()
        .any(|l| l.contains(&note) && l.contains("token")));
    assert!(!tab.html().await.contains(&CARD[..8]), "masks only");
    tab.set(
        "#f-body",
        "{\n  \"card\": \"{{ TOKEN_ID }}\",\n  \"note\": \"\"\n}",
    )
    .await;
    insert(tab, &card).await;
    // The caret inside "note": "…".
    tab.eval("(() => { const t = document.querySelector('#f-body'); const i = t.value.indexOf('\"note\": \"') + 9; t.focus(); t.setSelectionRange(i, i); })()")
        .await;
    insert(tab, &note).await;
    let body = tab.eval("document.querySelector('#f-body').value").await;
    assert_eq!(
        body,
        Value::String(format!(
            "{{\n  \"card\": \"{{{{ {card} | json: '$.number' }}}}\",\n  \"note\": \"{{{{ {note} }}}}\"\n}}"
        ))
    );
    tab.eval("document.querySelector('#try').scrollIntoView()")
        .await;
    tab.screenshot("proxy-try-it-tokens").await;
    tab.click("section.try button[type=submit]").await;
    let received: Value = serde_json::from_str(&s.harness.upstream.last_body()).expect("JSON");
    assert_eq!(
        received,
        json!({"card": CARD, "note": "hello"}),
        "detokenized"
    );
    b.close().await;
}

async fn applications_are_shown_by_name(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let (writer, token) = crate::support::written_by_checkout(&s).await;
    let Some(b) = browse_setup(s).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    sign_in(tab, &s.admin_key).await;
    let footer = tab.eval("document.querySelector('footer').innerText").await;
    let footer = footer.as_str().unwrap_or_default();
    let admin = s.admin.application_id().to_string();
    assert!(
        footer.starts_with("Signed in as admin ") && footer.contains(&admin),
        "{footer}"
    );
    tab.go(&format!("/console/tokens/{token}")).await;
    let created = tab
        .eval("[...document.querySelectorAll('dl.details .app-name')].map(e => [e.textContent, e.title])")
        .await;
    let writer = writer.application_id().to_string();
    assert_eq!(
        created,
        json!([["checkout", writer], ["checkout", writer]]),
        "created and modified by, the id on hover"
    );
    tab.screenshot("token-names").await;
    tab.click("section.data button[type=submit]").await;
    tab.go("/console/audit?action=token.read").await;
    let actors = tab
        .eval("[...document.querySelectorAll('table.events td.actor')].map(td => [td.innerText, td.querySelector('[title]')?.title])")
        .await;
    assert_eq!(
        actors,
        json!([[format!("admin {admin}"), admin]]),
        "the actor, named, with the id the event recorded beside it"
    );
    b.close().await;
}
