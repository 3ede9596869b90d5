//! Token lifecycle at the storage boundary, on both backends: the sweep is safe
//! with several processes on one database, and tokens written before fingerprints get theirs
//! at start-up, equal to what a new token with the same data gets.

use serde_json::json;
use tessera_domain::{store::TokenRecords, NewToken, TokenType, Vault};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::vaults::{admin, vault};

backend_tests!(
    concurrent_sweeps_delete_each_expired_token_once,
    legacy_tokens_get_the_fingerprint_new_tokens_get,
    an_update_racing_a_delete_leaves_no_metadata_behind,
    concurrent_creates_fail_alone,
);

/// Four "processes" (vaults over one database) sweep at once: every expired token is deleted,
/// the counts add up to exactly that many, no sweep fails, and live tokens stay.
async fn concurrent_sweeps_delete_each_expired_token_once(t: &TestDatabase) {
    let vaults: Vec<Vault> = (0..4).map(|_| vault(t)).collect();
    let admin = admin(&vaults[0], "acme").await;
    let soon = time::OffsetDateTime::now_utc() + time::Duration::milliseconds(800);
    let soon = soon
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let mut expiring = Vec::new();
    for i in 0..60 {
        let mut input = NewToken::new(TokenType::Token, json!(format!("e{i}")));
        input.expires_at = Some(soon.clone());
        input.metadata = Some([("k".to_string(), "v".to_string())].into());
        expiring.push(
            vaults[0]
                .create_token(&admin, input)
                .await
                .expect("token")
                .id,
        );
    }
    let keeper = vaults[0]
        .create_token(&admin, NewToken::new(TokenType::Token, json!("kept")))
        .await
        .expect("token");
    // Links in both directions, which must go with the expired tokens.
    vaults[0]
        .associate(&admin, keeper.id.clone(), expiring[0].clone())
        .await
        .expect("link");
    vaults[0]
        .associate(&admin, expiring[1].clone(), keeper.id.clone())
        .await
        .expect("link");
    tokio::time::sleep(std::time::Duration::from_millis(900)).await;
    let reports = futures_util::future::join_all(vaults.iter().map(|v| v.sweep())).await;
    let deleted: u64 = reports
        .into_iter()
        .map(|r| r.expect("sweep").expired_tokens)
        .sum();
    assert_eq!(deleted, 60, "each expired token deleted exactly once");
    for id in &expiring {
        assert!(t
            .db
            .get_token(admin.tenant_id(), id.clone())
            .await
            .expect("read")
            .is_none());
    }
    assert!(t
        .db
        .get_token(admin.tenant_id(), keeper.id.clone())
        .await
        .expect("read")
        .is_some());
    let children = vaults[0]
        .list_children(&admin, keeper.id, &Default::default(), Default::default())
        .await
        .expect("children");
    assert_eq!(children.total_items, 0, "the link went with the child");
    assert_eq!(
        t.count("token_metadata WHERE key = 'k'").await,
        0,
        "the metadata rows went with their tokens"
    );
    assert_eq!(vaults[1].sweep().await.expect("sweep").expired_tokens, 0);
}

/// A token whose row has no fingerprint (as rows written before migration 000005) is read
/// with a computed one, and start-up's backfill stores exactly that.
async fn legacy_tokens_get_the_fingerprint_new_tokens_get(t: &TestDatabase) {
    let vault = vault(t);
    let admin = admin(&vault, "acme").await;
    let card = json!({"number": "4242424242424242", "cvc": "123"});
    let old = vault
        .create_token(&admin, NewToken::new(TokenType::Card, card.clone()))
        .await
        .expect("token");
    let expected = old.fingerprint.clone();
    t.execute("UPDATE tokens SET fingerprint = ''").await;
    let stored_fingerprint = || async {
        t.db.get_token(admin.tenant_id(), old.id.clone())
            .await
            .expect("read")
            .expect("row")
            .fingerprint
    };
    assert_eq!(stored_fingerprint().await, "");
    let read = vault.get_token(&admin, old.id.clone()).await.expect("read");
    assert_eq!(read.fingerprint, expected, "computed when read");
    assert_eq!(vault.backfill_fingerprints().await.expect("backfill"), 1);
    assert_eq!(vault.backfill_fingerprints().await.expect("again"), 0);
    assert_eq!(stored_fingerprint().await, expected);
    let new = vault
        .create_token(&admin, NewToken::new(TokenType::Card, card))
        .await
        .expect("token");
    assert_eq!(new.fingerprint, expected);
}

/// Updates of a token's metadata racing its delete, many times over: whichever wins, no
/// metadata row outlives its token (metadata rows reference their tenant on PostgreSQL, so
/// the delete, not a foreign key, must take what a concurrent update wrote).
async fn an_update_racing_a_delete_leaves_no_metadata_behind(t: &TestDatabase) {
    let vault = vault(t);
    let admin = admin(&vault, "acme").await;
    for round in 0..40 {
        let mut input = NewToken::new(TokenType::Token, json!(round));
        input.metadata = Some([("k".to_string(), "old".to_string())].into());
        let id = vault.create_token(&admin, input).await.expect("token").id;
        let patch: tessera_domain::TokenPatch =
            serde_json::from_value(json!({"metadata": {"k": "new", "round": round.to_string()}}))
                .expect("patch");
        let (_, _) = tokio::join!(
            vault.update_token(&admin, id.clone(), patch),
            vault.delete_token(&admin, id)
        );
    }
    assert_eq!(
        t.count(
            "token_metadata m WHERE NOT EXISTS \
             (SELECT 1 FROM tokens t WHERE t.tenant_id = m.tenant_id AND t.id = m.token_id)"
        )
        .await,
        0,
        "no metadata row without its token"
    );
}

/// 48 creates at once (SQLite writes those queued together in one transaction): one whose
/// chosen id is taken fails alone with a conflict, as does a bulk call holding a taken id; every
/// other create, and every token of the other bulk calls, is stored.
async fn concurrent_creates_fail_alone(t: &TestDatabase) {
    let vault = vault(t);
    let admin = admin(&vault, "acme").await;
    let taken = uuid::Uuid::new_v4();
    let mut first = NewToken::new(TokenType::Token, json!("first"));
    first.id = Some(taken.to_string());
    vault.create_token(&admin, first).await.expect("first");
    let single = |i: usize| {
        let mut input = NewToken::new(TokenType::Token, json!(i));
        input.metadata = Some([("n".to_string(), i.to_string())].into());
        if i == 7 {
            input.id = Some(taken.to_string());
        }
        input
    };
    let bulk = |i: usize| {
        (0..5)
            .map(|j| {
                let mut input = single(1000 + i * 10 + j);
                if i == 3 && j == 4 {
                    input.id = Some(taken.to_string());
                }
                input
            })
            .collect::<Vec<_>>()
    };
    let singles =
        futures_util::future::join_all((0..40).map(|i| vault.create_token(&admin, single(i))));
    let bulks =
        futures_util::future::join_all((0..8).map(|i| vault.create_tokens(&admin, bulk(i))));
    let (singles, bulks) = tokio::join!(singles, bulks);
    for (i, outcome) in singles.into_iter().enumerate() {
        match outcome {
            Ok(token) => {
                assert_ne!(i, 7, "the taken id was refused");
                let stored = vault.get_token(&admin, token.id).await.expect("stored");
                assert_eq!(stored.data.expose(), &json!(i));
            }
            Err(e) => {
                assert_eq!(i, 7, "only the taken id fails: {e}");
                assert!(
                    matches!(&e, tessera_domain::VaultError::IdsTaken(ids) if ids.len() == 1 && ids[0].1.to_string() == taken.to_string()),
                    "a 409 naming the taken id: {e}"
                );
            }
        }
    }
    for (i, outcome) in bulks.into_iter().enumerate() {
        match outcome {
            Ok(tokens) => {
                assert_ne!(i, 3, "the call holding the taken id was refused");
                assert_eq!(tokens.len(), 5);
            }
            Err(e) => {
                assert_eq!(i, 3, "only that call fails: {e}");
                assert!(
                    matches!(&e, tessera_domain::VaultError::IdsTaken(ids) if ids.len() == 1),
                    "{e}"
                );
            }
        }
    }
    // 1 + 39 singles + 7 calls of 5; the refused call left nothing.
    assert_eq!(t.count("tokens").await, 75);
    assert_eq!(t.count("token_metadata").await, 74);
}
