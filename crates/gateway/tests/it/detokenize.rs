//! `detokenize` (docs/api.md, "Proxy invocation" and "Detokenization expressions"): every `{{ … }}` expression in the body and in
//! header values is replaced injection-safely for the body's type (JSON, form, text; opaque
//! bodies pass through); bad expressions, unknown and foreign tokens are a 400 before anything
//! is sent; and the gateway's answer never depends on what a token holds.

use std::collections::HashMap;

use http::Method;
use serde_json::{json, Value};
use tessera_domain::{NewToken, TokenType};
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Reply},
    vault::{plain_token, tenant_admin},
};

backend_tests!(
    a_regular_expression_search_is_refused_whatever_the_token,
    a_regular_expression_match_is_refused_as_not_allowed,
    a_comparison_answers_the_same_whether_it_selects_or_not,
    filters_that_do_not_apply_render_null,
    a_whole_string_expression_takes_the_tokens_json_type,
    a_json_path_selects_inside_the_token,
    a_filter_applies_to_the_token,
    expressions_inside_a_string_are_interpolated,
    token_data_arrives_literally_and_is_never_re_expanded,
    values_without_expressions_are_untouched,
    content_length_is_recomputed,
    form_values_are_percent_encoded_so_they_cannot_add_fields,
    text_bodies_are_substituted,
    opaque_bodies_pass_through_untouched,
    braces_where_expressions_are_not_looked_for_are_warned_about,
    header_values_are_substituted,
    a_header_value_that_would_break_the_line_is_percent_encoded,
    non_ascii_header_data_is_utf8_percent_encoded,
    a_malformed_expression_is_a_400_saying_where,
    an_unterminated_expression_is_a_400,
    another_tenants_token_is_answered_like_an_unknown_one,
    an_expired_token_is_answered_like_an_unknown_one_even_when_cached,
    more_than_a_hundred_distinct_tokens_is_a_400,
    a_hundred_distinct_tokens_are_detokenized,
);

/// `(api key, proxy key)`: a `token:use` key and a plain proxy.
async fn keys(g: &Harness) -> (String, String) {
    (g.use_key().await, g.plain_proxy().await)
}

/// `{"probe": "{{ token: CARD | json: "PATH" }}"}`.
fn json_path_probe(card: &str, path: &str) -> String {
    json!({"probe": format!("{{{{ token: {card} | json: \"{path}\" }}}}")}).to_string()
}

/// The card probed at `path` through a destination that does not echo: the answer.
async fn probe(g: &Harness, keys: &(String, String), card: &str, path: &str) -> Reply {
    quiet(g, keys, &json_path_probe(card, path)).await
}

/// POSTs a JSON `body` to a destination that does not echo (it answers `{"ok":true}`).
async fn quiet(g: &Harness, (key, pkey): &(String, String), body: &str) -> Reply {
    g.call_keyed(
        Method::POST,
        "/proxy",
        (pkey, key),
        &[("content-type", "application/json"), ("x-echo-quiet", "1")],
        body,
    )
    .await
}

/// `json: "$[?search(@.number, '^41')]"` answered 200 or 400
/// by whether the card matched, so a `token:use` key read a card in 45 requests. Regular
/// expressions are refused whatever the token; other predicates and filters that do not apply
/// render `null`, so the gateway's answer is the same and only the destination sees the value.
async fn a_regular_expression_search_is_refused_whatever_the_token(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let keys = keys(&g).await;
    let card = g.token(json!({"number": "4111111111111111"}), None).await;
    // The exact attack: refused at parse time, identically, whatever the card holds.
    let matching = probe(&g, &keys, &card, "$[?search(@.data.number, '^41')]")
        .await
        .proxy_error(400);
    let other = probe(&g, &keys, &card, "$[?search(@.data.number, '^55')]")
        .await
        .proxy_error(400);
    assert_eq!(matching.body, other.body);
}

/// As above: `match` is a regular expression too.
async fn a_regular_expression_match_is_refused_as_not_allowed(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let keys = keys(&g).await;
    let card = g.token(json!({"number": "4111111111111111"}), None).await;
    let m = probe(&g, &keys, &card, "$[?match(@.data.number, '4.*')]")
        .await
        .proxy_error(400);
    assert!(m.detail().contains("not allowed"), "{}", m.body);
}

/// As above: a comparison selects or not; the caller sees the same answer
/// either way, and only the destination sees the difference.
async fn a_comparison_answers_the_same_whether_it_selects_or_not(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let keys = keys(&g).await;
    let card = g.token(json!({"number": "4111111111111111"}), None).await;
    let hits = g.upstream.hits();
    let selected = probe(&g, &keys, &card, "$[?@.number < '5']")
        .await
        .expect(200);
    let sent_selected = g.upstream.last_body();
    let unselected = probe(&g, &keys, &card, "$[?@.number < '3']")
        .await
        .expect(200);
    let sent_unselected = g.upstream.last_body();
    assert_eq!(
        (selected.status, &selected.body),
        (unselected.status, &unselected.body)
    );
    assert_eq!(g.upstream.hits(), hits + 2, "both reached the destination");
    assert_eq!(
        sent_selected,
        json!({"probe": {"number": "4111111111111111"}}).to_string()
    );
    assert_eq!(sent_unselected, json!({"probe": null}).to_string());
}

/// As above: filters that do not apply to the value render null instead of
/// failing.
async fn filters_that_do_not_apply_render_null(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let keys = keys(&g).await;
    let card = g.token(json!({"number": "4111111111111111"}), None).await;
    for expr in [
        format!("{{{{ {card} | last4 }}}}"),
        format!("{{{{ {card} | to_number }}}}"),
        format!("{{{{ {card} | json: '$.number' | to_boolean }}}}"),
        format!("{{{{ {card} | json: '$.missing' }}}}"),
    ] {
        let body = json!({"probe": expr}).to_string();
        let r = quiet(&g, &keys, &body).await.expect(200);
        assert_eq!(r.body, json!({"ok": true}));
        assert_eq!(
            g.upstream.last_body(),
            json!({"probe": null}).to_string(),
            "{expr}"
        );
    }
}

/// POSTs `body` as JSON through a plain proxy with a `token:use` key; expects a 200.
async fn send_json(g: &Harness, body: &Value) -> Reply {
    let (key, pkey) = keys(g).await;
    g.post_json(&pkey, Some(&key), &body.to_string())
        .await
        .expect(200)
}

/// A token holding `{"number": "4111111111111111", "exp": {"month": 12}}`.
async fn card_object(g: &Harness) -> String {
    g.token(
        json!({"number": "4111111111111111", "exp": {"month": 12}}),
        None,
    )
    .await
}

async fn a_whole_string_expression_takes_the_tokens_json_type(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let string = g.token(json!("4242424242424242"), None).await;
    let number = g.token(json!(1234), None).await;
    let object = card_object(&g).await;
    let body = json!({
        "s": format!("{{{{{string}}}}}"),
        "n": format!("{{{{ {number} }}}}"),
        "o": format!("{{{{{object}}}}}"),
    });
    let sent = send_json(&g, &body).await.sent_json();
    assert_eq!(sent["s"], json!("4242424242424242"));
    assert_eq!(
        sent["n"],
        json!(1234),
        "a whole-string expression takes the token's JSON type"
    );
    assert_eq!(
        sent["o"],
        json!({"number": "4111111111111111", "exp": {"month": 12}})
    );
}

async fn a_json_path_selects_inside_the_token(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let object = card_object(&g).await;
    let body = json!({"path": format!("{{{{ token: {object} | json: '$.data.exp.month' }}}}")});
    let sent = send_json(&g, &body).await.sent_json();
    assert_eq!(sent["path"], json!(12));
}

async fn a_filter_applies_to_the_token(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let string = g.token(json!("4242424242424242"), None).await;
    let body = json!({"last4": format!("{{{{{string} | last4}}}}")});
    let sent = send_json(&g, &body).await.sent_json();
    assert_eq!(sent["last4"], json!("4242"));
}

async fn expressions_inside_a_string_are_interpolated(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let string = g.token(json!("4242424242424242"), None).await;
    let number = g.token(json!(1234), None).await;
    let body =
        json!({"inside": format!("card ending {{{{{string}|last4}}}} for {{{{{number}}}}}")});
    let sent = send_json(&g, &body).await.sent_json();
    assert_eq!(sent["inside"], json!("card ending 4242 for 1234"));
}

/// A token whose data holds JSON and expression syntax, and an expression naming another
/// token: `(its id, its data)`.
async fn tricky_token(g: &Harness) -> (String, String) {
    let other = g.token(json!("never-expanded"), None).await;
    let tricky_value = format!("q\" b\\ close}} nl\n tab\t {{{{{other}}}}}");
    (g.token(json!(tricky_value), None).await, tricky_value)
}

async fn token_data_arrives_literally_and_is_never_re_expanded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (tricky, tricky_value) = tricky_token(&g).await;
    let body = json!({
        "tricky": format!("{{{{{tricky}}}}}"),
        "tricky_inside": format!("<{{{{{tricky}}}}}>"),
    });
    let sent = send_json(&g, &body).await.sent_json();
    assert_eq!(
        sent["tricky"],
        json!(tricky_value),
        "arrives literally, never re-expanded"
    );
    assert_eq!(sent["tricky_inside"], json!(format!("<{tricky_value}>")));
}

async fn values_without_expressions_are_untouched(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let string = g.token(json!("4242424242424242"), None).await;
    let body = json!({
        "s": format!("{{{{{string}}}}}"),
        "untouched": {"list": [1, "plain", null]},
    });
    let sent = send_json(&g, &body).await.sent_json();
    assert_eq!(sent["untouched"], body["untouched"]);
}

async fn content_length_is_recomputed(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let string = g.token(json!("4242424242424242"), None).await;
    let (tricky, _) = tricky_token(&g).await;
    let body = json!({
        "s": format!("{{{{{string}}}}}"),
        "tricky": format!("{{{{{tricky}}}}}"),
    });
    let r = send_json(&g, &body).await;
    let upstream_headers = &r.echoed()["headers"];
    assert_eq!(
        upstream_headers["content-length"],
        json!(r.echoed()["body"].as_str().expect("body").len().to_string()),
        "Content-Length is recomputed"
    );
}

/// Sends `body` (or, for a GET, no body) with an extra header through a plain proxy with a
/// `token:use` key; expects a 200.
async fn send(g: &Harness, method: Method, header: (&str, &str), body: &str) -> Reply {
    let (key, pkey) = keys(g).await;
    g.call(
        method,
        "/proxy",
        &[("svc-proxy-key", &pkey), ("svc-api-key", &key), header],
        body,
    )
    .await
    .expect(200)
}

/// POSTs `body(card)` as `content_type` through a plain proxy, where `card` is a token holding
/// `4242 4242&x=1` (form syntax in the data): the answer and the body sent.
async fn send_form_breaking_card(
    db: &TestDatabase,
    content_type: &str,
    body: impl FnOnce(&str) -> String,
) -> (Reply, String) {
    let g = Harness::start(db).await;
    let card = g.token(json!("4242 4242&x=1"), None).await;
    let body = body(&card);
    let r = send(&g, Method::POST, ("content-type", content_type), &body).await;
    (r, body)
}

async fn form_values_are_percent_encoded_so_they_cannot_add_fields(db: &TestDatabase) {
    let (r, _) = send_form_breaking_card(db, "application/x-www-form-urlencoded", |card| {
        format!("number=%7B%7B{card}%7D%7D&amount=100")
    })
    .await;
    let sent = r.echoed()["body"].as_str().expect("body").to_string();
    let pairs: HashMap<String, String> = form_urlencoded::parse(sent.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(
        pairs["number"], "4242 4242&x=1",
        "percent-encoded, so & and = cannot add fields"
    );
    assert_eq!(pairs["amount"], "100");
    assert_eq!(pairs.len(), 2);
}

async fn text_bodies_are_substituted(db: &TestDatabase) {
    let (r, _) =
        send_form_breaking_card(db, "text/plain", |card| format!("pan={{{{{card}}}}};")).await;
    assert_eq!(r.echoed()["body"], json!("pan=4242 4242&x=1;"));
}

async fn opaque_bodies_pass_through_untouched(db: &TestDatabase) {
    let (r, raw) = send_form_breaking_card(db, "application/octet-stream", |card| {
        format!("{{{{{card}}}}}")
    })
    .await;
    assert_eq!(r.echoed()["body"], json!(raw));
}

/// JSON sent as a form (curl's `-d` without a `Content-Type`), or with a type that is never
/// scanned, reaches the destination with its expressions unresolved: the answer says so in
/// `SVC-PROXY-WARNING`. A request whose expressions were all looked at carries none.
async fn braces_where_expressions_are_not_looked_for_are_warned_about(db: &TestDatabase) {
    let json_body = |card: &str| json!({"number": format!("{{{{ {card} }}}}")}).to_string();
    for (content_type, warned) in [
        ("application/x-www-form-urlencoded", Some("in a field name")),
        (
            "application/octet-stream",
            Some("Content-Type is not scanned"),
        ),
        ("application/json", None),
    ] {
        let (r, _) = send_form_breaking_card(db, content_type, json_body).await;
        let warning = r.header("svc-proxy-warning");
        match warned {
            Some(words) => assert!(
                warning.is_some_and(|w| w.contains(words)),
                "{content_type}: {warning:?}"
            ),
            None => assert_eq!(warning, None, "{content_type}"),
        }
    }
    let (r, _) = send_form_breaking_card(db, "application/x-www-form-urlencoded", |card| {
        format!("number={{{{{card}}}}}")
    })
    .await;
    assert_eq!(r.header("svc-proxy-warning"), None, "a substituted form");
}

async fn header_values_are_substituted(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let bearer = g.token(json!("sk_live_abc"), None).await;
    let bearer_header = format!("Bearer {{{{{bearer}}}}}");
    let r = send(&g, Method::GET, ("authorization", &bearer_header), "").await;
    assert_eq!(
        r.echoed()["headers"]["authorization"],
        json!("Bearer sk_live_abc")
    );
}

/// A value that would break the header line is percent-encoded, never refused: the answer must
/// not depend on a token's content.
async fn a_header_value_that_would_break_the_line_is_percent_encoded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let evil = g.token(json!("ok\r\nX-Injected: 1"), None).await;
    let evil_header = format!("{{{{{evil}}}}}");
    let r = send(&g, Method::GET, ("x-evil", &evil_header), "").await;
    let seen = &r.echoed()["headers"];
    assert_eq!(seen["x-evil"], json!("ok%0D%0AX-Injected: 1"));
    assert!(seen.get("x-injected").is_none(), "no header was injected");
}

/// Non-ASCII data in a header: UTF-8 percent-encoded (RFC 8187 style), not raw bytes.
async fn non_ascii_header_data_is_utf8_percent_encoded(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let accented = g.token(json!("Zoë Ünal"), None).await;
    let accented_header = format!("{{{{{accented}}}}}");
    let r = send(&g, Method::GET, ("x-name", &accented_header), "").await;
    assert_eq!(r.echoed()["headers"]["x-name"], json!("Zo%C3%AB %C3%9Cnal"));
}

async fn a_malformed_expression_is_a_400_saying_where(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = keys(&g).await;
    let before = g.upstream.hits();
    let r = g
        .post_json(&pkey, Some(&key), r#"{"a": "{{ not a token }}"}"#)
        .await
        .proxy_error(400);
    let detail = r.detail();
    assert!(
        detail.contains("byte") && detail.contains("body/a"),
        "{detail}"
    );
    assert_eq!(g.upstream.hits(), before, "nothing reached the destination");
}

async fn an_unterminated_expression_is_a_400(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = keys(&g).await;
    let before = g.upstream.hits();
    g.post_json(&pkey, Some(&key), r#"{"a": "{{ unterminated"}"#)
        .await
        .proxy_error(400);
    assert_eq!(g.upstream.hits(), before, "nothing reached the destination");
}

/// `{"a": "{{id}}"}`: a JSON body naming token `id`.
fn token_body(id: &str) -> String {
    format!(r#"{{"a": "{{{{{id}}}}}"}}"#)
}

/// [`token_body`] of `id` sent through the plain proxy, expecting the gateway's 400.
async fn refused_token(g: &Harness, key: &str, pkey: &str, id: &str) -> Reply {
    g.post_json(pkey, Some(key), &token_body(id))
        .await
        .proxy_error(400)
}

async fn another_tenants_token_is_answered_like_an_unknown_one(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = keys(&g).await;
    let other_admin = tenant_admin(&g.vault, "other").await;
    let foreign = plain_token(&g.vault, &other_admin, json!("theirs"))
        .await
        .to_string();
    let unknown = uuid::Uuid::new_v4().to_string();
    let before = g.upstream.hits();
    let a = refused_token(&g, &key, &pkey, &unknown).await;
    let b = refused_token(&g, &key, &pkey, &foreign).await;
    assert_eq!(
        a.detail().replace(&unknown, "ID"),
        b.detail().replace(&foreign, "ID"),
        "another tenant's token is answered like an unknown one"
    );
    assert!(!b.body.to_string().contains("theirs"));
    assert_eq!(g.upstream.hits(), before, "nothing reached the destination");
}

/// Once past `expires_at`, a token is unknown to the gateway too — also when its
/// row was cached (the cache keeps rows up to its TTL; expiry is checked on every use).
async fn an_expired_token_is_answered_like_an_unknown_one_even_when_cached(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = keys(&g).await;
    let soon = (time::OffsetDateTime::now_utc() + time::Duration::milliseconds(700))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let mut input = NewToken::new(TokenType::Token, json!("short-lived"));
    input.expires_at = Some(soon);
    let id = g.create_token(input).await;
    let ok = g.post_json(&pkey, Some(&key), &token_body(&id)).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let sent: Value = serde_json::from_str(&g.upstream.last_body()).expect("json");
    assert_eq!(sent["a"], "short-lived");
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    let before = g.upstream.hits();
    let gone = refused_token(&g, &key, &pkey, &id).await;
    let unknown = uuid::Uuid::new_v4().to_string();
    let never = refused_token(&g, &key, &pkey, &unknown).await;
    assert_eq!(
        gone.detail().replace(&id, "ID"),
        never.detail().replace(&unknown, "ID")
    );
    assert_eq!(g.upstream.hits(), before, "nothing reached the destination");
}

/// A JSON array of one expression per token of `ids`.
fn expressions(ids: &[String]) -> String {
    Value::Array(
        ids.iter()
            .map(|id| json!(format!("{{{{{id}}}}}")))
            .collect(),
    )
    .to_string()
}

/// `count` distinct tokens holding 0, 1, …
async fn numbered_tokens(g: &Harness, count: i32) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..count {
        ids.push(g.token(json!(i), None).await);
    }
    ids
}

async fn more_than_a_hundred_distinct_tokens_is_a_400(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = keys(&g).await;
    let ids = numbered_tokens(&g, 101).await;
    let before = g.upstream.hits();
    let r = g
        .post_json(&pkey, Some(&key), &expressions(&ids))
        .await
        .proxy_error(400);
    assert!(r.detail().contains("101"), "{}", r.body);
    assert_eq!(g.upstream.hits(), before, "nothing reached the destination");
}

async fn a_hundred_distinct_tokens_are_detokenized(db: &TestDatabase) {
    let g = Harness::start(db).await;
    let (key, pkey) = keys(&g).await;
    let ids = numbered_tokens(&g, 100).await;
    let r = g
        .post_json(&pkey, Some(&key), &expressions(&ids))
        .await
        .expect(200);
    assert_eq!(
        r.sent_json(),
        Value::Array((0..100).map(|i| json!(i)).collect())
    );
}
