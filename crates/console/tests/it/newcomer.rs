//! What a newcomer meets in the first hour, over HTTP: `/` leads to the console (and nothing
//! else does), a card number typed with spaces is taken and a refused form keeps what it may,
//! a proxy's key is said to be and is readable again by `proxy:read`, Try it offers the
//! tokens the key may read (masked), and applications are named within the tenant (ids shown
//! where a name may not be read or no longer exists).

use std::time::Duration;

use actix_web::http::{header, Method, StatusCode};
use serde_json::json;
use tessera_console::SECURITY_HEADERS;
use tessera_domain::{audit::AuditAction, NewToken, TokenId, TokenType};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::support::{client, other_tenant, Page, Setup, CARD};

backend_tests!(
    the_root_leads_to_the_console_and_nothing_else_does,
    a_spaced_card_number_is_taken_and_a_refused_form_keeps_the_rest,
    a_refused_bank_form_keeps_only_the_routing_number,
    a_proxy_key_is_shown_again_to_proxy_readers_only,
    try_it_offers_the_tokens_the_key_may_read_masked,
    applications_are_named_within_the_tenant,
    an_id_is_shown_without_application_read_or_once_deleted,
);

fn assert_headers(what: &str, page: &Page) {
    for (name, value) in SECURITY_HEADERS {
        assert_eq!(
            page.headers.get(name).and_then(|v| v.to_str().ok()),
            Some(value),
            "{what}: {name}"
        );
    }
}

async fn the_root_leads_to_the_console_and_nothing_else_does(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    for (method, uri) in [
        (Method::GET, "/"),
        (Method::HEAD, "/"),
        // The query is not a destination: the target is fixed.
        (Method::GET, "/?next=https%3A%2F%2Fevil.example%2F"),
    ] {
        let res = c.send(method.clone(), uri, None).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{method} {uri}");
        assert_eq!(res.location(), "/console", "{method} {uri}");
        assert_headers(uri, &res);
    }
    for uri in [
        "//evil.example/",
        "/index.html",
        "/proxy",
        "/console/../x",
        "/consoles",
    ] {
        let res = c.get(uri).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(res.location(), "", "{uri}: no redirect");
    }
    let posted = c.send(Method::POST, "/", None).await;
    assert_eq!(posted.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_headers("POST /", &posted);
    assert!(
        posted
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/html")),
        "the console's own error page"
    );
    let followed = c.get("/console").await;
    assert_eq!(followed.status, StatusCode::OK, "where it leads: sign-in");
}

/// The new-token form for a card, with `number`, month `13` or `12`, and the rest.
fn card_form<'a>(csrf: &'a str, number: &'a str, month: &'a str) -> Vec<(&'static str, &'a str)> {
    vec![
        ("csrf", csrf),
        ("type", "card"),
        ("data.number", number),
        ("data.expiration_month", month),
        ("data.expiration_year", "2031"),
        ("data.cvc", "737"),
        ("metadata", "customer=c_9"),
        ("container", "/pci/newcomer/"),
        ("expires_at", ""),
    ]
}

async fn a_spaced_card_number_is_taken_and_a_refused_form_keeps_the_rest(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let created = c
        .post(
            "/console/tokens/new",
            &card_form(&csrf, "4111 1111-1111 1111", "12"),
        )
        .await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.body);
    let id: TokenId = created.location()["/console/tokens/".len()..]
        .split('?')
        .next()
        .expect("id")
        .parse()
        .expect("token id");
    let token = s.vault().get_token(&s.admin, id).await.expect("token");
    assert_eq!(
        token.data.expose()["number"],
        json!(CARD),
        "stored without spaces"
    );

    let refused = c
        .post(
            "/console/tokens/new",
            &card_form(&csrf, "4111 1111 1111 1111", "13"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    let body = &refused.body;
    assert!(
        body.contains("data.expiration_month"),
        "the problem is named"
    );
    for kept in [
        "name=\"data.expiration_month\" value=\"13\"",
        "name=\"data.expiration_year\" value=\"2031\"",
        "/pci/newcomer/",
        "customer=c_9",
        "<option value=\"card\" selected>",
    ] {
        assert!(body.contains(kept), "kept: {kept}");
    }
    for gone in [
        "name=\"data.number\" value=\"\"",
        "name=\"data.cvc\" value=\"\"",
    ] {
        assert!(body.contains(gone), "asked again: {gone}");
    }
    // Not as typed nor as stored; and the CVC as a value, not as three digits inside an id.
    for number in ["4111 1111", "41111111"] {
        assert!(!body.contains(number), "the number is not sent back");
    }
    assert!(
        !body.contains("\"737\"") && !body.contains(">737<"),
        "nor the CVC"
    );
    assert!(body.contains("enter them again"), "and the page says why");
}

async fn a_refused_bank_form_keeps_only_the_routing_number(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let bank = c
        .post(
            "/console/tokens/new",
            &[
                ("csrf", csrf.as_str()),
                ("type", "bank"),
                ("data.routing_number", "011000015"),
                ("data.account_number", "000123456789"),
                ("expires_at", "soon"),
            ],
        )
        .await;
    assert_eq!(bank.status, StatusCode::BAD_REQUEST, "{}", bank.body);
    assert!(
        bank.body.contains("value=\"011000015\""),
        "the routing number is kept"
    );
    assert!(
        !bank.body.contains("000123456789"),
        "the account number is not"
    );
}

async fn a_proxy_key_is_shown_again_to_proxy_readers_only(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let (id, key) = s
        .proxy(json!({"name": "p", "destination_url": s.harness.upstream_url()}))
        .await;
    let reader = s
        .key(json!({"name": "reader", "type": "management", "permissions": ["proxy:read"]}))
        .await;
    let tokens_only = s
        .key(json!({"name": "tokens", "type": "private", "permissions": ["token:read"]}))
        .await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&reader).await;
    let page = c.get(&format!("/console/proxies/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains(&key), "not on the page until asked for");
    assert!(page.body.contains("Show key") && page.body.contains("proxy:read"));
    assert!(page.body.contains("SVC-PROXY-KEY"), "what it is for");
    assert!(!page.body.contains("shown only once"), "nothing untrue");
    let shown = c
        .post(&format!("/console/proxies/{id}/key"), &[("csrf", &csrf)])
        .await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert!(
        shown.body.contains(&format!("id=\"proxy-key\">{key}<")),
        "shown again"
    );
    let forged = c
        .post(&format!("/console/proxies/{id}/key"), &[("csrf", "forged")])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert!(!forged.body.contains(&key));

    let mut narrow = client(&s).await;
    let csrf = narrow.signed_in(&tokens_only).await;
    let refused = narrow
        .post(&format!("/console/proxies/{id}/key"), &[("csrf", &csrf)])
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.body.contains("Not permitted") && !refused.body.contains(&key));
    let actions: Vec<_> = s.events().await.iter().map(|e| e.event.action).collect();
    assert!(
        !actions.contains(&AuditAction::ProxyUpdated),
        "showing changes nothing: {actions:?}"
    );
}

/// A card, a bank account and a generic token in the console's tenant: their ids.
async fn three_tokens(s: &Setup) -> [String; 3] {
    let card = s.card().await;
    let bank = NewToken::new(
        TokenType::Bank,
        json!({"routing_number": "011000015", "account_number": "000123456789"}),
    );
    let generic = NewToken::new(TokenType::Token, json!("a-secret-value"));
    let mut ids = vec![card];
    for input in [bank, generic] {
        let t = s
            .vault()
            .create_token(&s.admin, input)
            .await
            .expect("token");
        ids.push(t.id.to_string());
    }
    [ids[0].clone(), ids[1].clone(), ids[2].clone()]
}

async fn try_it_offers_the_tokens_the_key_may_read_masked(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let [card, bank, generic] = three_tokens(&s).await;
    let (proxy, _) = s
        .proxy(json!({"name": "p", "destination_url": s.harness.upstream_url()}))
        .await;
    // Applications of one type cannot hold both proxy:read and token:read (docs/api.md): a
    // management key opens the proxy and may read no token.
    let no_reader = s
        .key(json!({"name": "blind", "type": "management", "permissions": ["proxy:read"]}))
        .await;
    let mut c = client(&s).await;
    c.signed_in(&s.admin_key).await;
    let reads = s.token_reads().await;
    let page = c.get(&format!("/console/proxies/{proxy}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(
        body.contains(&format!("{{{{ {card} | json: '$.number' }}}}")),
        "a card's number"
    );
    assert!(
        body.contains(&format!("{{{{ {bank} }}}}"))
            && body.contains(&format!("{{{{ {generic} }}}}"))
    );
    assert!(
        body.contains("•••• 1111") && body.contains("•••• 6789"),
        "masks"
    );
    for data in [
        &CARD[..8],
        "\"737\"",
        ">737<",
        "011000015",
        "000123456789",
        "a-secret-value",
    ] {
        assert!(!body.contains(data), "no data: {data}");
    }
    assert_eq!(s.token_reads().await, reads, "listing reads no data");

    let mut blind = client(&s).await;
    blind.signed_in(&no_reader).await;
    let page = blind.get(&format!("/console/proxies/{proxy}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("may not read tokens"));
    for id in [&card, &bank, &generic] {
        assert!(!page.body.contains(id.as_str()), "no token listed");
    }
}

/// Another tenant with an application named `hidden-name`.
async fn another_tenants_application(s: &Setup) {
    let (_, elsewhere) = other_tenant(s.vault(), "elsewhere").await;
    let other_admin = s
        .vault()
        .authenticate(Some(&elsewhere))
        .await
        .expect("admin");
    let input = json!({"name": "hidden-name", "type": "private", "permissions": ["token:read"]});
    s.vault()
        .create_application(&other_admin, serde_json::from_value(input).expect("input"))
        .await
        .expect("their app");
}

async fn applications_are_named_within_the_tenant(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    another_tenants_application(&s).await;
    let (writer, token) = crate::support::written_by_checkout(&s).await;
    let admin_id = s.admin.application_id().to_string();
    let writer_id = writer.application_id().to_string();
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    c.post(
        &format!("/console/tokens/{token}/reveal"),
        &[("csrf", &csrf)],
    )
    .await;
    let page = c.get(&format!("/console/tokens/{token}")).await;
    let named = format!("title=\"{writer_id}\">checkout<");
    assert!(
        page.body.contains(&named),
        "Created by: the name, the id on hover"
    );
    let admin_named = format!("title=\"{admin_id}\">admin<");
    assert!(page.body.contains(&admin_named), "the footer");
    let audit = c.get("/console/audit").await;
    assert!(audit.body.contains(&admin_named), "the actor");
    let app = c.get(&format!("/console/applications/{writer_id}")).await;
    assert!(app.body.contains(&admin_named), "created by");
    for path in ["/console/audit", "/console/tokens", "/console/applications"] {
        assert!(!c.get(path).await.body.contains("hidden-name"), "{path}");
    }
}

async fn an_id_is_shown_without_application_read_or_once_deleted(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let (writer, token) = crate::support::written_by_checkout(&s).await;
    let writer_id = writer.application_id().to_string();
    // Without application:read, the ids alone (but for the signed-in application's own).
    let narrow_key = s
        .key(json!({"name": "narrow", "type": "private", "permissions": ["token:read"]}))
        .await;
    let mut narrow = client(&s).await;
    narrow.signed_in(&narrow_key).await;
    let page = narrow.get(&format!("/console/tokens/{token}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains(">checkout<"), "not named");
    assert!(page.body.contains(&writer_id), "the id");
    assert!(page.body.contains(">narrow<"), "its own name");
    // An application deleted since: the bare id.
    let mut c = client(&s).await;
    c.signed_in(&s.admin_key).await;
    assert!(c
        .get(&format!("/console/tokens/{token}"))
        .await
        .body
        .contains(">checkout<"));
    s.vault()
        .delete_application(&s.admin, writer.application_id())
        .await
        .expect("deleted");
    let page = c.get(&format!("/console/tokens/{token}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains(">checkout<") && page.body.contains(&writer_id));
}
