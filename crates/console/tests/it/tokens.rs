//! Tokens in the console: no card number in any page before Reveal, Reveal recorded as the
//! API's `token.read`, search with the `/tokens/search` rules, parents and children, and what a
//! narrow key sees.

use std::time::Duration;

use actix_web::http::StatusCode;
use serde_json::json;
use tessera_domain::{
    audit::{AuditAction, Outcome},
    NewToken, TokenType,
};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::support::{client, Setup, CARD};

backend_tests!(
    no_card_number_in_any_page_before_reveal,
    search_finds_by_metadata_type_fingerprint_and_container,
    a_narrow_key_sees_not_permitted_and_leaves_a_denial,
    tokens_with_chosen_ids_are_linked_encoded,
);

async fn no_card_number_in_any_page_before_reveal(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let card = s.card().await;
    let parent = s
        .vault()
        .create_token(&s.admin, NewToken::new(TokenType::Token, json!("parent")))
        .await
        .expect("parent");
    s.vault()
        .associate(&s.admin, parent.id.clone(), card.parse().expect("id"))
        .await
        .expect("link");
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let reads_before = s.token_reads().await;
    // Eight digits: random hex (ids, hashes) holds six of them now and then.
    let leading = &CARD[..8];
    for path in [
        "/console/tokens".to_string(),
        "/console/tokens?metadata=customer%3Dc_1&type=card".into(),
        format!("/console/tokens/{card}"),
        format!("/console/tokens/{card}/edit"),
        format!("/console/tokens/{card}/delete"),
        format!("/console/tokens/{}", parent.id),
        "/console/audit".into(),
    ] {
        let page = c.get(&path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert!(!page.body.contains(leading), "{path} shows card digits");
        // The CVC as a value, not as three digits inside an id.
        assert!(
            !page.body.contains(">737<") && !page.body.contains("&quot;737&quot;"),
            "{path} shows the CVC"
        );
    }
    let masked = c.get(&format!("/console/tokens/{card}")).await;
    assert!(masked.body.contains("•••• 1111"), "the last four digits");
    assert!(
        masked.body.contains(&parent.id.to_string()),
        "its parent is listed"
    );
    assert!(masked.body.contains("customer") && masked.body.contains("c_1"));
    assert_eq!(
        s.token_reads().await,
        reads_before,
        "viewing masked data is no read"
    );

    let revealed = c
        .post(
            &format!("/console/tokens/{card}/reveal"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(revealed.status, StatusCode::OK);
    assert!(revealed.body.contains(CARD) && revealed.body.contains("&quot;737&quot;"));
    let events = s.events().await;
    let read = events
        .iter()
        .find(|e| e.event.action == AuditAction::TokenRead)
        .expect("a token.read");
    assert_eq!(read.event.outcome, Outcome::Success);
    assert_eq!(
        read.event.resource_ids,
        vec![card.parse::<uuid::Uuid>().expect("uuid")]
    );
    assert_eq!(
        read.event.actor.to_wire(),
        s.admin.application_id().to_string()
    );
    assert!(read.event.request_id.is_some());
    assert_eq!(
        s.token_reads().await,
        reads_before + 1,
        "one read per Reveal"
    );
    // The parent lists its child without data.
    let parent_page = c.get(&format!("/console/tokens/{}", parent.id)).await;
    assert!(parent_page.body.contains(&card) && !parent_page.body.contains(leading));
}

async fn search_finds_by_metadata_type_fingerprint_and_container(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let card = s.card().await;
    let mut other = NewToken::new(TokenType::Token, json!({"a": 1}));
    other.containers = Some(vec!["/general/low/".into()]);
    let other = s
        .vault()
        .create_token(&s.admin, other)
        .await
        .expect("token");
    let fingerprint = s
        .vault()
        .get_token(&s.admin, card.parse().expect("id"))
        .await
        .expect("card")
        .fingerprint;
    let mut c = client(&s).await;
    c.signed_in(&s.admin_key).await;
    let only_card = |body: &str| body.contains(&card) && !body.contains(&other.id.to_string());
    for query in [
        "metadata=customer%3Dc_1".to_string(),
        "type=card".into(),
        format!("fingerprint={fingerprint}"),
        "container=%2Fpci%2F".into(),
    ] {
        let page = c.get(&format!("/console/tokens?{query}")).await;
        assert_eq!(page.status, StatusCode::OK, "{query}");
        assert!(only_card(&page.body), "{query}");
    }
    let both = c.get("/console/tokens").await;
    assert!(both.body.contains(&card) && both.body.contains(&other.id.to_string()));
    assert!(both.body.contains("2 in all"));
    let by_id = c.get(&format!("/console/tokens?id={card}")).await;
    assert_eq!(by_id.location(), format!("/console/tokens/{card}"));
    let bad = c
        .get("/console/tokens?container=nope&metadata=broken")
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.body.contains("line 1 is not of the form key=value"));
    let paged = c.get("/console/tokens?size=1&page=2").await;
    assert!(paged.body.contains("Page 2 of 2"));
}

async fn a_narrow_key_sees_not_permitted_and_leaves_a_denial(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let card = s.card().await;
    let narrow = s
        .key(json!({"name": "writer", "type": "public", "permissions": ["token:create"]}))
        .await;
    let mut c = client(&s).await;
    let csrf = c.signed_in(&narrow).await;
    let tokens = c.get("/console/tokens").await;
    assert_eq!(tokens.status, StatusCode::FORBIDDEN);
    assert!(tokens.body.contains("Not permitted") && tokens.body.contains("New token"));
    for path in [
        "/console/proxies",
        "/console/applications",
        "/console/audit",
    ] {
        let page = c.get(path).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{path}");
        assert!(page.body.contains("Not permitted"), "{path}");
        assert!(
            page.body.contains("Tokens") && page.body.contains("Sign out"),
            "navigation stays"
        );
    }
    let reveal = c
        .post(
            &format!("/console/tokens/{card}/reveal"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(reveal.status, StatusCode::FORBIDDEN);
    assert!(reveal.body.contains("Not permitted") && !reveal.body.contains(CARD));
    let denied = s
        .events()
        .await
        .into_iter()
        .find(|e| e.event.outcome == Outcome::Denied && e.event.action == AuditAction::TokenRead)
        .expect("the refused reveal is recorded");
    assert!(denied
        .event
        .reason
        .as_deref()
        .unwrap_or("")
        .contains("token:read"));
    // It may still create tokens.
    let created = c
        .post(
            "/console/tokens/new",
            &[("csrf", &csrf), ("type", "token"), ("data", "hello")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert!(created.body.contains("was created"));
}

/// A token whose id its creator chose (docs/api.md, "Token ids") is linked, searched and shown
/// with its id percent-encoded in every URL, and HTML-escaped on the page.
async fn tokens_with_chosen_ids_are_linked_encoded(db: &TestDatabase) {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let id = "k7dn59wb@gmail.com\"'onmouseover";
    let mut input = NewToken::new(TokenType::Token, json!("secret-value"));
    input.id = Some(id.to_string());
    s.vault()
        .create_token(&s.admin, input)
        .await
        .expect("token");
    let mut c = client(&s).await;
    let csrf = c.signed_in(&s.admin_key).await;
    let encoded = "/console/tokens/k7dn59wb%40gmail.com%22%27onmouseover";
    let found = c
        .get("/console/tokens?id=k7dn59wb%40gmail.com%22%27onmouseover")
        .await;
    assert_eq!(found.status, StatusCode::SEE_OTHER);
    assert_eq!(found.location(), encoded);
    let page = c.get(encoded).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("k7dn59wb@gmail.com&quot;"),
        "escaped on the page"
    );
    assert!(!page.body.contains("com\"'"), "never as markup");
    assert!(page.body.contains(&format!("{encoded}/edit")));
    assert!(!page.body.contains("secret-value"), "masked until revealed");
    // Deleting it redirects with the id encoded in the query, and the notice shows it escaped.
    let gone = c
        .post(&format!("{encoded}/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(gone.status, StatusCode::SEE_OTHER, "{}", gone.body);
    assert_eq!(
        gone.location(),
        "/console/tokens?deleted=k7dn59wb%40gmail.com%22%27onmouseover"
    );
    let list = c.get(gone.location()).await;
    assert!(
        list.body.contains("k7dn59wb@gmail.com&quot;'onmouseover"),
        "{}",
        list.body
    );
    // Only a token id is echoed: other text in the link is not.
    let spoof = c.get("/console/tokens?deleted=all%20your%20tokens").await;
    assert!(!spoof.body.contains("all your tokens"), "{}", spoof.body);
}
