//! Browser flows of proxies (compile error shown, fixed, the key shown, Try it against the
//! echo upstream) and of applications (container rules added, reordered, saved), and the
//! console at a phone's width.

use std::time::Duration;

use serde_json::json;
use tessera_domain::{ApplicationId, Proxy, ProxyId};
use tessera_testkit::{backend_tests, db::TestDatabase};

use super::{browse_as_admin, browse_setup, browse_with_card, flows::sign_in, Browsing};
use crate::support::{Setup, CARD};

backend_tests!(
    create_a_proxy_through_a_compile_error_and_try_it,
    edit_an_applications_container_rules,
    a_phone_width_page_fits,
);

const BROKEN: &str = "module.exports = async function (req) {\n  const body = req.args.body;\n  return { body, headers: req.args.headers ;\n};\n";
const FIXED: &str = "module.exports = async function (req) {\n  const body = req.args.body;\n  body.via = req.configuration.TAG;\n  return { body, headers: req.args.headers };\n};\n";

async fn create_a_proxy_through_a_compile_error_and_try_it(db: &TestDatabase) {
    let Some((b, card)) = browse_with_card(db).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.go("/console/proxies/new").await;
    tab.type_into("#f-name", "payments").await;
    tab.type_into("#f-destination-url", &s.harness.upstream_url())
        .await;
    tab.type_into("#config-0-key", "TAG").await;
    tab.type_into("#config-0-value", "console").await;
    tab.set("#f-request-transform-code", BROKEN).await;
    tab.click("main form.stack button[type=submit]").await;
    let text = tab.text().await;
    assert!(
        text.contains("does not compile") && text.contains("(line 3)"),
        "{text}"
    );
    let marked = tab
        .eval("document.querySelector('.gutter .error-line')?.textContent")
        .await;
    assert_eq!(marked, json!("3"), "the editor marks the line");
    tab.screenshot("proxy-compile-error").await;
    tab.set("#f-request-transform-code", FIXED).await;
    tab.click("main form.stack button[type=submit]").await;
    let shown = tab
        .eval("document.querySelector('#proxy-key').textContent")
        .await;
    let id = tab
        .eval("document.querySelector(\"a[href^='/console/proxies/']\").getAttribute('href')")
        .await;
    let id: ProxyId = id.as_str().expect("link")["/console/proxies/".len()..]
        .parse()
        .expect("id");
    let proxy = s.vault().get_proxy(&s.admin, id).await.expect("proxy");
    assert_eq!(
        shown,
        json!(proxy.key.expose()),
        "the key, with a copy button"
    );
    let text = tab.text().await;
    assert!(text.contains("Copy"));
    assert!(
        text.contains("SVC-PROXY-KEY")
            && text.contains("proxy:read")
            && !text.contains("only once"),
        "what is true of it: {text}"
    );
    tab.screenshot("proxy-key").await;
    try_it_shows_what_the_destination_received(&b, &proxy, &card).await;
    b.close().await;
}

/// On the proxy's page (its key hidden until Show key), "Try it" sends a request naming
/// `card` and shows the destination's answer: the request detokenized and transformed.
async fn try_it_shows_what_the_destination_received(b: &Browsing, proxy: &Proxy, card: &str) {
    let (s, tab, id) = (&b.s, &b.tab, proxy.id);
    tab.click(&format!("a[href='/console/proxies/{id}']")).await;
    assert!(
        !tab.html().await.contains(proxy.key.expose().as_str()),
        "not on the proxy's page until Show key"
    );
    tab.type_into("#f-path", "/charges").await;
    tab.set(
        "#f-body",
        &format!("{{\"card\": \"{{{{ {card} | json: '$.number' }}}}\"}}"),
    )
    .await;
    tab.click("section.try button[type=submit]").await;
    let text = tab.text().await;
    assert!(
        text.contains("Destination status") && text.contains("svc-proxy-destination-status: 200"),
        "{text}"
    );
    assert!(
        text.contains(CARD),
        "the answer shows what the echo received: {text}"
    );
    assert_eq!(s.harness.upstream.hits(), 1);
    let received: serde_json::Value =
        serde_json::from_str(&s.harness.upstream.last_body()).expect("JSON");
    assert_eq!(
        received,
        json!({"card": CARD, "via": "console"}),
        "detokenized, transformed"
    );
    tab.screenshot("proxy-try-it").await;
}

async fn edit_an_applications_container_rules(db: &TestDatabase) {
    let Some(b) = browse_as_admin(db, Duration::from_secs(60)).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.go("/console/applications/new").await;
    tab.type_into("#f-name", "checkout").await;
    tab.eval("document.querySelector('#perm-token-create').click()")
        .await;
    tab.type_into("#f-rules-0--priority", "1").await;
    tab.type_into("#f-rules-0--container", "/pci/").await;
    tab.eval("document.querySelector('#rule-0-token-use').click()")
        .await;
    tab.eval("document.querySelector(\"[data-add-row='rule']\").click()")
        .await;
    let rules = tab
        .eval("document.querySelectorAll('[data-rule]').length")
        .await;
    assert_eq!(rules, json!(2), "a row was added to the blank one");
    tab.type_into("#f-rules-1--priority", "2").await;
    tab.type_into("#f-rules-1--container", "/bank/").await;
    tab.eval("document.querySelector('#rule-1-token-read').click()")
        .await;
    // Move the /bank/ rule above the /pci/ one: priorities follow the order shown.
    tab.eval(
        "document.querySelectorAll('[data-rule]')[1].querySelector(\"[data-move='up']\").click()",
    )
    .await;
    let first = tab
        .eval("document.querySelector('[data-rule] input[name$=\".container\"]').value")
        .await;
    assert_eq!(first, json!("/bank/"));
    tab.screenshot("application-rules").await;
    tab.click("main form.stack button[type=submit]").await;
    assert!(tab.text().await.contains("key_"), "the key, once");
    let href = tab
        .eval("document.querySelector(\"a[href^='/console/applications/']\").getAttribute('href')")
        .await;
    let id: ApplicationId = href.as_str().expect("link")["/console/applications/".len()..]
        .parse()
        .expect("id");
    let app = s.vault().get_application(&s.admin, id).await.expect("app");
    let rules: Vec<(i32, &str)> = app
        .rules
        .iter()
        .map(|r| (r.priority, r.container.as_str()))
        .collect();
    assert_eq!(rules, vec![(1, "/bank/"), (2, "/pci/")]);
    tab.click(&format!("a[href='/console/applications/{id}']"))
        .await;
    tab.type_into("#f-rules-1--container", "bad").await;
    tab.click("main form.stack button[type=submit]").await;
    let text = tab.text().await;
    assert!(
        text.contains("There is a problem") && text.contains("rules[1].container"),
        "{text}"
    );
    b.close().await;
}

async fn a_phone_width_page_fits(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    s.card().await;
    let Some(b) = browse_setup(s).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    tab.width(390, true).await;
    sign_in(tab, &s.admin_key).await;
    let overflow = tab
        .eval("document.documentElement.scrollWidth <= window.innerWidth + 1")
        .await;
    assert_eq!(overflow, json!(true), "no sideways scrolling of the page");
    tab.screenshot("phone-tokens").await;
    b.close().await;
}
