//! Search indexes, `data:` terms, fingerprint expressions and Basis Theory's single-value
//! token types (docs/api.md, "Search indexes", "Fingerprint expressions", "Token types"), on
//! both backends: what is found, what is never found (other containers, other tenants), what
//! an update changes, and what each type accepts.

use actix_web::{
    body::MessageBody,
    dev::{Service, ServiceResponse},
    Error,
};
use serde_json::{json, Value};
use tessera_testkit::{api::Caller, backend_tests, db::TestDatabase};

use crate::caller::{id_of, ids, two_tenants};

backend_tests!(
    data_terms_find_indexed_values_exactly,
    searches_never_reach_unreadable_containers_or_other_tenants,
    updates_reindex_and_deletes_drop_the_index,
    rendering_over_stored_data_needs_read,
    fingerprint_expressions_decide_deduplication,
    basis_theorys_token_types_validate_and_default,
    a_database_copy_holds_no_indexed_value,
);

/// `POST /tokens/search` with `query` as `caller`: the ids found, and the total.
async fn found<S, B>(caller: Caller<'_, S>, query: &str) -> (Vec<String>, Value)
where
    S: crate::caller::ManagementApi<B>,
    B: actix_web::body::MessageBody,
{
    let r = caller
        .post("/tokens/search", json!({"query": query}))
        .await
        .expect(200);
    let mut found = ids(&r.body);
    found.sort();
    (found, r.body["pagination"]["total_items"].clone())
}

async fn data_terms_find_indexed_values_exactly(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let ssn = admin
        .post(
            "/tokens",
            json!({"type": "token", "data": "111-22-3333",
                "search_indexes": ["{{ data }}", "{{ data | last4 }}", "{{ data | remove: '-' }}"]}),
        )
        .await
        .expect(201);
    assert_eq!(
        ssn.body["search_indexes"],
        json!([
            "{{ data }}",
            "{{ data | last4 }}",
            "{{ data | remove: '-' }}"
        ])
    );
    let ssn = id_of(&ssn.body);
    let person = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": {"name": {"first": "John", "last": "Smith"}, "zip": "10010"},
                "search_indexes": ["{{ data.name.first | upcase }} {{ data.name.last | upcase }}", "{{ data.zip }}"]}),
        )
        .await;
    let unindexed = admin
        .create("/tokens", json!({"type": "token", "data": "111-22-3333"}))
        .await;
    for (query, expected) in [
        ("data:3333", vec![ssn.clone()]),
        ("data:111223333", vec![ssn.clone()]),
        ("data:\"111-22-3333\"", vec![ssn.clone()]),
        ("data:\"JOHN SMITH\"", vec![person.clone()]),
        ("data:10010", vec![person.clone()]),
        ("data:333", vec![]),
        ("data:\"john smith\"", vec![]),
        ("data:3333 AND type:card", vec![]),
        ("data:3333 AND data:111223333", vec![ssn.clone()]),
        ("data:3333 AND data:10010", vec![]),
    ] {
        assert_eq!(found(admin, query).await.0, expected, "{query}");
    }
    assert!(!found(admin, "data:\"111-22-3333\"")
        .await
        .0
        .contains(&unindexed));
    // The cursor search too, and its pages bind the terms.
    let v2 = admin
        .post(
            "/v2/tokens/search",
            json!({"query": "data:3333", "size": 1}),
        )
        .await
        .expect(200);
    assert_eq!(ids(&v2.body), vec![ssn.clone()]);
    // A bad template is a 400 naming it; nothing is stored.
    let before = admin.total("/tokens").await;
    for (indexes, field) in [
        (json!(["{{ data.missing }}"]), "search_indexes[0]"),
        (
            json!(["{{ data }}", "{{ data | remove: 'x' }}"]),
            "search_indexes[1]",
        ),
        (json!(["{{ data | shout }}"]), "search_indexes[0]"),
        (json!(vec!["{{ data }}"; 11]), "search_indexes"),
    ] {
        admin
            .refuses(
                "/tokens",
                json!({"type": "token", "data": "x", "search_indexes": indexes}),
                field,
            )
            .await;
    }
    assert_eq!(admin.total("/tokens").await, before);
}

async fn searches_never_reach_unreadable_containers_or_other_tenants(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let index = json!(["{{ data | last4 }}"]);
    let secret = admin
        .create("/tokens", json!({"type": "token", "data": "9999-1234", "containers": ["/secret/"], "search_indexes": index}))
        .await;
    let open = admin
        .create("/tokens", json!({"type": "token", "data": "0000-1234", "containers": ["/open/"], "search_indexes": index}))
        .await;
    let narrow = admin
        .app_key(json!({"name": "narrow", "type": "private", "permissions": [],
            "rules": [{"description": "open only", "priority": 1, "container": "/open/", "permissions": ["token:read"]}]}))
        .await;
    let narrow = admin.with_key(&narrow);
    // The narrow key finds only what it may read; the count says nothing of the rest.
    assert_eq!(
        found(narrow, "data:1234").await,
        (vec![open.clone()], json!(1))
    );
    assert_eq!(
        found(narrow, "data:1234 AND container:/secret/").await,
        (vec![], json!(0))
    );
    let mut both = vec![secret.clone(), open.clone()];
    both.sort();
    assert_eq!(found(admin, "data:1234").await, (both, json!(2)));
    // Another tenant's equal value is another tenant's: never found here, nor there.
    let other = Caller::new(&app, &b.admin_key);
    assert_eq!(found(other, "data:1234").await, (vec![], json!(0)));
    other
        .create(
            "/tokens",
            json!({"type": "token", "data": "5555-1234", "search_indexes": index}),
        )
        .await;
    assert_eq!(found(other, "data:1234").await.1, json!(1));
    assert_eq!(found(admin, "data:1234").await.1, json!(2));
}

async fn updates_reindex_and_deletes_drop_the_index(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let id = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": "1111-2222", "search_indexes": ["{{ data | last4 }}"]}),
        )
        .await;
    let uri = format!("/tokens/{id}");
    // New data: the old value is no longer found, the new one is.
    admin
        .merge_patch(&uri, &json!({"data": "3333-4444"}))
        .await
        .expect(200);
    assert!(found(admin, "data:2222").await.0.is_empty());
    assert_eq!(found(admin, "data:4444").await.0, vec![id.clone()]);
    // New indexes, replacing the old, over the same data.
    let r = admin
        .merge_patch(
            &uri,
            &json!({"search_indexes": ["{{ data | slice: 0, 4 }}"]}),
        )
        .await
        .expect(200);
    assert_eq!(
        r.body["search_indexes"],
        json!(["{{ data | slice: 0, 4 }}"])
    );
    assert!(found(admin, "data:4444").await.0.is_empty());
    assert_eq!(found(admin, "data:3333").await.0, vec![id.clone()]);
    // `null`: the type's defaults (none for `token`).
    admin
        .merge_patch(&uri, &json!({"search_indexes": null}))
        .await
        .expect(200);
    assert!(found(admin, "data:3333").await.0.is_empty());
    assert_eq!(
        admin.get(&uri).await.expect(200).body["search_indexes"],
        json!([])
    );
    // A patch whose template fails on the data is a 400, and changes nothing.
    admin
        .merge_patch(&uri, &json!({"search_indexes": ["{{ data.nope }}"]}))
        .await
        .expect(400);
    // Deleted: found no more.
    admin
        .merge_patch(&uri, &json!({"search_indexes": ["{{ data }}"]}))
        .await
        .expect(200);
    assert_eq!(found(admin, "data:3333-4444").await.0, vec![id.clone()]);
    admin.delete(&uri).await.expect(204);
    assert!(found(admin, "data:3333-4444").await.0.is_empty());
    let rows = db.count("token_search_index").await;
    assert_eq!(rows, 0, "the index rows went with the token");
}

/// Whether a template renders over a token's data (a filter that does not apply, an empty
/// value) tells something of that data: a key that may update a token but not read it may
/// not have templates rendered over the data it did not send.
async fn rendering_over_stored_data_needs_read(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    let plain = admin
        .create("/tokens", json!({"type": "token", "data": "4111"}))
        .await;
    let by_metadata = admin
        .create(
            "/tokens",
            json!({"type": "token", "data": "4111", "metadata": {"k": "v"},
                "fingerprint_expression": "{{ data | slice: 0, 1 }}{{ metadata.k }}"}),
        )
        .await;
    let writer = admin
        .app_key(json!({"name": "writer", "type": "private", "permissions": ["token:update"]}))
        .await;
    let writer = admin.with_key(&writer);
    let probe = json!({"search_indexes": ["{{ data | slice: 0, 1 | remove: '4' }}"]});
    for patch in [
        probe.clone(),
        json!({"fingerprint_expression": "{{ data | card_exp: 'MM' }}"}),
        json!({"search_indexes": null}),
    ] {
        writer
            .merge_patch(&format!("/tokens/{plain}"), &patch)
            .await
            .expect(403);
    }
    // The metadata a fingerprint expression reads: rendered again over the stored data.
    writer
        .merge_patch(
            &format!("/tokens/{by_metadata}"),
            &json!({"metadata": {"k": null}}),
        )
        .await
        .expect(403);
    // Metadata no template reads, and templates over the data the patch sends, are its own.
    writer
        .merge_patch(
            &format!("/tokens/{plain}"),
            &json!({"metadata": {"k": "w"}}),
        )
        .await
        .expect(200);
    let sent = json!({"data": "5222", "search_indexes": ["{{ data | last4 }}"]});
    writer
        .merge_patch(&format!("/tokens/{plain}"), &sent)
        .await
        .expect(200);
    // With `token:read` the same probe is a plain 400 naming the index.
    let r = admin
        .merge_patch(
            &format!("/tokens/{plain}"),
            &json!({"search_indexes": ["{{ data | slice: 0, 1 | remove: '5' }}"]}),
        )
        .await
        .expect(400);
    assert!(
        r.body["errors"]["search_indexes[0]"].is_array(),
        "{}",
        r.body
    );
}

async fn fingerprint_expressions_decide_deduplication(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    accounts_are_equal_by_their_expression(&admin).await;
    text_metadata_and_type_defaults_make_fingerprints(&admin).await;
    a_cards_fingerprint_is_its_number_and_cannot_be_forged(&admin).await;
    admin
        .refuses(
            "/tokens",
            json!({"type": "token", "data": "x", "fingerprint_expression": "{{ data.none }}"}),
            "fingerprint_expression",
        )
        .await;
}

/// Bank accounts deduplicated by their account number alone.
async fn accounts_are_equal_by_their_expression<S, B>(admin: &Caller<'_, S>)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let by_account = |account: &str, routing: &str| {
        json!({"type": "token", "deduplicate_token": true,
            "data": {"bank": {"routing_number": routing, "account_number": account}},
            "fingerprint_expression": "{{ data.bank.account_number }}"})
    };
    let first = admin
        .post("/tokens", by_account("1234567890", "021000021"))
        .await
        .expect(201);
    // Another routing number, the same account: the expression says they are equal.
    let again = admin
        .post("/tokens", by_account("1234567890", "011000015"))
        .await
        .expect(200);
    assert_eq!(id_of(&again.body), id_of(&first.body));
    assert_eq!(
        again.body["fingerprint_expression"],
        json!("{{ data.bank.account_number }}")
    );
    let other = admin
        .post("/tokens", by_account("999", "021000021"))
        .await
        .expect(201);
    assert_ne!(id_of(&other.body), id_of(&first.body));
}

/// Static text and metadata (Basis Theory's examples), and an SSN's default.
async fn text_metadata_and_type_defaults_make_fingerprints<S, B>(admin: &Caller<'_, S>)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    // Static text and metadata (Basis Theory's examples).
    let with_prefix = json!({"type": "token", "data": "111-22-3333", "fingerprint_expression": "customer-{{ data }}"});
    let a1 = admin.post("/tokens", with_prefix.clone()).await.expect(201);
    let plain = admin
        .post("/tokens", json!({"type": "token", "data": "111-22-3333"}))
        .await
        .expect(201);
    assert_ne!(a1.body["fingerprint"], plain.body["fingerprint"]);
    let by_customer = |customer: &str| {
        json!({"type": "token", "data": "x", "metadata": {"customer": customer}, "deduplicate_token": true,
            "fingerprint_expression": "{{ metadata.customer }}"})
    };
    let c1 = admin.post("/tokens", by_customer("c_1")).await.expect(201);
    admin.post("/tokens", by_customer("c_2")).await.expect(201);
    let c1_again = admin.post("/tokens", by_customer("c_1")).await.expect(200);
    assert_eq!(id_of(&c1_again.body), id_of(&c1.body));
    // An SSN's default ignores its dashes, as Basis Theory's does.
    let ssn = |data: &str| json!({"type": "social_security_number", "data": data, "deduplicate_token": true});
    let s1 = admin.post("/tokens", ssn("123-45-6789")).await.expect(201);
    let s2 = admin.post("/tokens", ssn("123456789")).await.expect(200);
    assert_eq!(id_of(&s1.body), id_of(&s2.body));
    assert_eq!(
        s1.body["fingerprint_expression"],
        json!("{{ data | remove: '-' }}")
    );
}

/// A card's fingerprint, and an expression that renders another card's number.
async fn a_cards_fingerprint_is_its_number_and_cannot_be_forged<S, B>(admin: &Caller<'_, S>)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    // A card's fingerprint is the one it always had: its number.
    let card = json!({"type": "card", "data": {"number": "4242424242424242"}});
    let c = admin.post("/tokens", card).await.expect(201);
    let by_expr = admin
        .post("/tokens", json!({"type": "card", "data": {"number": "4242424242424242", "cvc": "123"}, "fingerprint_expression": "{{ data.number }}"}))
        .await
        .expect(201);
    assert_eq!(c.body["fingerprint"], by_expr.body["fingerprint"]);
    assert_eq!(c.body["fingerprint_expression"], Value::Null);
    // Named as the default, it is the default: a deduplicating create finds the first card.
    let same = admin
        .post("/tokens", json!({"type": "card", "data": {"number": "4242424242424242"}, "deduplicate_token": true, "fingerprint_expression": "{{ data.number }}"}))
        .await
        .expect(200);
    assert_eq!(id_of(&same.body), id_of(&c.body));
    // An expression cannot make a token claim another value's fingerprint for deduplication:
    // this card renders 4111…'s number from its own data, and so fingerprints as 4111…; a
    // deduplicating create of 4111… compares only tokens fingerprinted the default way.
    let forged = admin
        .post("/tokens", json!({"type": "card", "data": {"number": "4000056655665556"},
            "fingerprint_expression": "{{ data.number | remove: '4000056655665556' }}4111111111111111"}))
        .await
        .expect(201);
    let genuine =
        json!({"type": "card", "data": {"number": "4111111111111111"}, "deduplicate_token": true});
    let first = admin.post("/tokens", genuine.clone()).await.expect(201);
    assert_eq!(
        first.body["fingerprint"], forged.body["fingerprint"],
        "the same fingerprint"
    );
    assert_ne!(
        id_of(&first.body),
        id_of(&forged.body),
        "yet not its duplicate"
    );
    let again = admin.post("/tokens", genuine).await.expect(200);
    assert_eq!(id_of(&again.body), id_of(&first.body));
}

async fn basis_theorys_token_types_validate_and_default(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    for (token_type, good, container) in [
        ("card_number", json!("4242424242424242"), "/pci/high/"),
        ("card_number", json!("378282246310005"), "/pci/high/"),
        ("social_security_number", json!("123-45-6789"), "/pii/high/"),
        ("social_security_number", json!("123456789"), "/pii/high/"),
        ("employer_id_number", json!("12-3456789"), "/pii/high/"),
        ("us_bank_account_number", json!("1234567890"), "/bank/high/"),
        ("us_bank_routing_number", json!("021000021"), "/bank/low/"),
    ] {
        let r = admin
            .post("/tokens", json!({"type": token_type, "data": good}))
            .await
            .expect(201);
        assert_eq!(r.body["type"], json!(token_type));
        assert_eq!(r.body["containers"], json!([container]), "{token_type}");
    }
    for (token_type, bad) in [
        ("card_number", json!("4242424242424241")),
        ("card_number", json!("424242424242")),
        ("card_number", json!(4242424242424242u64)),
        ("social_security_number", json!("123-45-678")),
        ("social_security_number", json!("123-45-67890")),
        ("social_security_number", json!("123-45-678a")),
        ("social_security_number", json!("-123456789")),
        ("employer_id_number", json!(123456789)),
        ("us_bank_account_number", json!("12")),
        ("us_bank_account_number", json!("123456789012345678")),
        ("us_bank_routing_number", json!("021000022")),
        ("us_bank_routing_number", json!("02100002")),
    ] {
        admin
            .refuses("/tokens", json!({"type": token_type, "data": bad}), "data")
            .await;
    }
    // The SSN's default indexes find it as given, without dashes and by its last four.
    let ssn = admin
        .post(
            "/tokens",
            json!({"type": "social_security_number", "data": "987-65-4321"}),
        )
        .await
        .expect(201);
    assert_eq!(
        ssn.body["search_indexes"],
        json!([
            "{{ data }}",
            "{{ data | replace: '-' }}",
            "{{ data | last4 }}"
        ])
    );
    for term in ["data:\"987-65-4321\"", "data:987654321", "data:4321"] {
        assert_eq!(found(admin, term).await.0, vec![id_of(&ssn.body)], "{term}");
    }
    let listed = admin.page("/tokens?type=social_security_number").await;
    assert_eq!(listed["pagination"]["total_items"], json!(3));
}

async fn a_database_copy_holds_no_indexed_value(db: &TestDatabase) {
    let (app, a, _) = two_tenants(db).await;
    let admin = Caller::new(&app, &a.admin_key);
    admin
        .create(
            "/tokens",
            json!({"type": "social_security_number", "data": "246-80-1357",
            "search_indexes": ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"]}),
        )
        .await;
    let stored = db.stored_bytes().await;
    for plain in [&b"246-80-1357"[..], b"246801357"] {
        assert!(
            !stored.windows(plain.len()).any(|w| w == plain),
            "{}",
            String::from_utf8_lossy(plain)
        );
    }
}
