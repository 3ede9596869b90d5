//! Token reads batched across concurrent requests: with the token cache off, the
//! reads of requests served in the same turn share one statement, and every request is
//! answered exactly as it would be alone — its own values forwarded, another tenant's, a
//! missing or an expired token a 400, a token outside the key's containers a 403 — never with
//! another request's rows.

use std::time::Duration;

use serde_json::{json, Value};
use tessera_domain::{NewToken, TokenType};
use tessera_testkit::{
    backend_tests,
    db::TestDatabase,
    gateway::{Harness, Options},
    vault::{plain_token, tenant_admin},
};

backend_tests!(concurrent_requests_sharing_batches_get_each_their_own_answer);

/// Eight rounds of six requests: own tokens (200), with a foreign, a missing or an expired one
/// (400), outside the key's containers (403), and `/pci/` with a key that may use it (200).
fn cases(f: &Fixture) -> Vec<Case> {
    let values = |ids: &[usize]| ids.iter().map(|i| format!("mine-{i}")).collect::<Vec<_>>();
    let mut cases = Vec::new();
    for round in 0..8 {
        let (a, b) = (round % 4, (round + 1) % 4);
        cases.push(Case {
            key: f.all.clone(),
            ids: vec![f.mine[a].clone(), f.mine[b].clone()],
            expect: Ok(values(&[a, b])),
        });
        cases.push(Case {
            key: f.all.clone(),
            ids: vec![f.mine[a].clone(), f.foreign.clone()],
            expect: Err(400),
        });
        cases.push(Case {
            key: f.all.clone(),
            ids: vec![f.missing.clone(), f.mine[b].clone()],
            expect: Err(400),
        });
        cases.push(Case {
            key: f.all.clone(),
            ids: vec![f.expired.clone()],
            expect: Err(400),
        });
        cases.push(Case {
            key: f.general_only.clone(),
            ids: vec![f.mine[a].clone(), f.pci.clone()],
            expect: Err(403),
        });
        cases.push(Case {
            key: f.all.clone(),
            ids: vec![f.pci.clone(), f.mine[b].clone()],
            expect: Ok(vec!["pci-secret".into(), format!("mine-{b}")]),
        });
    }
    cases
}

/// One request of the mix: the tokens it names and what it must get.
struct Case {
    key: String,
    ids: Vec<String>,
    /// `Ok(values)`: 200 with these values forwarded in order; `Err(status)`: a proxy error.
    expect: Result<Vec<String>, u16>,
}

/// What the requests name: the keys, and tokens of every kind a read can meet.
struct Fixture {
    all: String,
    general_only: String,
    mine: Vec<String>,
    pci: String,
    foreign: String,
    expired: String,
    missing: String,
}

/// A tenant with four general tokens and one `/pci/` token, a key for all and one for
/// `/general/` only; another tenant's token; one of ours that has expired; an id never used.
async fn fixture(g: &Harness) -> Fixture {
    let all = g.use_key().await;
    let general_only = g
        .key(json!({"name": "scoped", "type": "private", "rules": [
            {"priority": 1, "container": "/general/", "permissions": ["token:use"]}]}))
        .await;
    let mut mine = Vec::new();
    for i in 0..4 {
        mine.push(g.token(json!(format!("mine-{i}")), None).await);
    }
    let pci = g.token(json!("pci-secret"), Some("/pci/")).await;
    let other_admin = tenant_admin(&g.vault, "other").await;
    let foreign = plain_token(&g.vault, &other_admin, json!("theirs"))
        .await
        .to_string();
    let soon = (time::OffsetDateTime::now_utc() + time::Duration::milliseconds(500))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let mut short = NewToken::new(TokenType::Token, json!("short-lived"));
    short.expires_at = Some(soon);
    let expired = g.vault.create_token(&g.admin, short).await;
    let expired = expired.expect("token").id.to_string();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let missing = uuid::Uuid::new_v4().to_string();
    Fixture {
        all,
        general_only,
        mine,
        pci,
        foreign,
        expired,
        missing,
    }
}

async fn concurrent_requests_sharing_batches_get_each_their_own_answer(db: &TestDatabase) {
    let options = Options {
        cache_ttl: Some(Duration::ZERO),
        ..Options::default()
    };
    let g = Harness::start_with(db, options).await;
    let pkey = g.plain_proxy().await;
    let cases = cases(&fixture(&g).await);
    let replies = futures_util::future::join_all(cases.iter().map(|case| {
        let body = Value::Array(
            case.ids
                .iter()
                .map(|id| json!(format!("{{{{{id}}}}}")))
                .collect(),
        )
        .to_string();
        let (pkey, key) = (pkey.clone(), case.key.clone());
        let g = &g;
        async move { g.post_json(&pkey, Some(&key), &body).await }
    }))
    .await;
    for (case, reply) in cases.iter().zip(replies) {
        match &case.expect {
            Ok(values) => {
                assert_eq!(reply.status, 200, "{:?}: {}", case.ids, reply.body);
                assert_eq!(reply.sent_json(), json!(values), "{:?}", case.ids);
            }
            Err(status) => {
                let reply = reply.proxy_error(*status);
                let detail = reply.detail();
                for secret in ["mine-", "pci-secret", "theirs", "short-lived"] {
                    assert!(!detail.contains(secret), "{detail}");
                }
            }
        }
    }
}
