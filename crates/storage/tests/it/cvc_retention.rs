//! CVC retention at the storage boundary, on both backends (docs/operations.md, "CVC
//! retention"): reads stop showing a card's CVC once its retention has passed, before any
//! sweep; sweeps in several "processes" (vaults over one database) remove each CVC once,
//! leaving `modified_at` alone; a retention of zero never stores it; cards written before the
//! release lose CVCs older than the retention at the first sweep.

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_domain::{
    token::CvcRetention, NewToken, Principal, TokenId, TokenPatch, TokenType, Vault,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{backend_tests, db::TestDatabase};
use time::Duration;

use crate::vaults::admin;

backend_tests!(
    reads_stop_at_the_retention_and_sweeps_remove_each_cvc_once,
    a_retention_of_zero_never_stores_a_cvc,
    an_update_past_the_retention_keeps_no_cvc,
    cards_from_before_the_release_lose_old_cvcs_at_the_first_sweep,
);

/// A vault over `t` keeping CVCs for `retention`.
fn vault_keeping(t: &TestDatabase, retention: Duration) -> Vault {
    Vault::new(
        Arc::new(DetachedStore::new(t.db.clone())),
        tessera_testkit::master_key(),
    )
    .with_cvc_retention(CvcRetention::new(retention))
}

fn card(cvc: Option<&str>) -> Value {
    let mut card = json!({"number": "4242424242424242", "expiration_month": 12,
        "expiration_year": 2030});
    if let Some(cvc) = cvc {
        card["cvc"] = json!(cvc);
    }
    card
}

async fn create(vault: &Vault, admin: &Principal, data: Value) -> TokenId {
    vault
        .create_token(admin, NewToken::new(TokenType::Card, data))
        .await
        .expect("card")
        .id
}

async fn cvc_of(vault: &Vault, admin: &Principal, id: &TokenId) -> Option<Value> {
    let token = vault.get_token(admin, id.clone()).await.expect("read");
    token.data.expose().get("cvc").cloned()
}

async fn reads_stop_at_the_retention_and_sweeps_remove_each_cvc_once(t: &TestDatabase) {
    let second = Duration::seconds(1);
    let sweepers: Vec<Vault> = (0..3).map(|_| vault_keeping(t, second)).collect();
    // A vault keeping CVCs for a week reads what the database holds.
    let week = vault_keeping(t, Duration::days(7));
    let admin = admin(&sweepers[0], "acme").await;
    let mut cards = Vec::new();
    for i in 0..5 {
        cards.push(create(&sweepers[0], &admin, card(Some(&format!("{i}23")))).await);
    }
    let without = create(&sweepers[0], &admin, card(None)).await;
    assert_eq!(
        cvc_of(&sweepers[0], &admin, &cards[0]).await,
        Some(json!("023"))
    );
    let before = week
        .get_token(&admin, cards[0].clone())
        .await
        .expect("read");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // Past the retention, no read shows it, though no sweep has run.
    assert_eq!(cvc_of(&sweepers[1], &admin, &cards[0]).await, None);
    assert_eq!(
        cvc_of(&week, &admin, &cards[0]).await,
        Some(json!("023")),
        "still sealed in the row until the sweep"
    );
    let reports = futures_util::future::join_all(sweepers.iter().map(|v| v.sweep())).await;
    let removed: u64 = reports
        .into_iter()
        .map(|r| r.expect("sweep").cvcs_removed)
        .sum();
    assert_eq!(removed, 5, "each CVC removed exactly once");
    for id in &cards {
        assert_eq!(
            cvc_of(&week, &admin, id).await,
            None,
            "the row holds no CVC"
        );
    }
    let after = week
        .get_token(&admin, cards[0].clone())
        .await
        .expect("read");
    assert_eq!(
        after.modified_at, before.modified_at,
        "the sweep is no change"
    );
    assert_eq!(after.fingerprint, before.fingerprint);
    assert_eq!(
        after.data.expose()["number"],
        json!("4242424242424242"),
        "the rest of the card stays"
    );
    assert_eq!(cvc_of(&week, &admin, &without).await, None);
    let again = sweepers[0].sweep().await.expect("sweep");
    assert_eq!(again.cvcs_removed, 0, "idempotent");
    // A mark cleared in the database stops the sweep, never shows a CVC past the retention.
    let late = create(&week, &admin, card(Some("999"))).await;
    t.execute(&format!(
        "UPDATE tokens SET holds_cvc = FALSE WHERE id = '{late}'"
    ))
    .await;
    t.execute(&format!(
        "UPDATE tokens SET created_at = '2026-01-01 00:00:00' WHERE id = '{late}'"
    ))
    .await;
    assert_eq!(cvc_of(&sweepers[0], &admin, &late).await, None);
}

async fn a_retention_of_zero_never_stores_a_cvc(t: &TestDatabase) {
    let never = vault_keeping(t, Duration::ZERO);
    let week = vault_keeping(t, Duration::days(7));
    let admin = admin(&never, "acme").await;
    let created = never
        .create_token(&admin, NewToken::new(TokenType::Card, card(Some("123"))))
        .await
        .expect("card");
    assert_eq!(created.data.expose().get("cvc"), None, "not even answered");
    assert_eq!(
        cvc_of(&week, &admin, &created.id).await,
        None,
        "never sealed"
    );
    assert_eq!(never.sweep().await.expect("sweep").cvcs_removed, 0);
}

async fn an_update_past_the_retention_keeps_no_cvc(t: &TestDatabase) {
    let second = vault_keeping(t, Duration::seconds(1));
    let week = vault_keeping(t, Duration::days(7));
    let admin = admin(&second, "acme").await;
    let id = create(&second, &admin, card(Some("123"))).await;
    let patch: TokenPatch =
        serde_json::from_value(json!({"data": card(Some("456"))})).expect("patch");
    second
        .update_token(&admin, id.clone(), patch.clone())
        .await
        .expect("update");
    assert_eq!(
        cvc_of(&week, &admin, &id).await,
        Some(json!("456")),
        "within the retention a new CVC is kept"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    second
        .update_token(&admin, id.clone(), patch)
        .await
        .expect("update");
    assert_eq!(
        cvc_of(&week, &admin, &id).await,
        None,
        "past it, an update's CVC is never sealed"
    );
}

/// Rolls the CVC mark back as if the rows were written before it existed, then migrates.
async fn as_before_the_release(t: &TestDatabase) {
    t.execute("DROP INDEX tokens_holding_cvc").await;
    t.execute("ALTER TABLE tokens DROP COLUMN holds_cvc").await;
    t.execute("DELETE FROM __diesel_schema_migrations WHERE version = '20261204000016'")
        .await;
    t.db.migrate().await.expect("migrate");
}

async fn cards_from_before_the_release_lose_old_cvcs_at_the_first_sweep(t: &TestDatabase) {
    let hour = vault_keeping(t, Duration::hours(1));
    let week = vault_keeping(t, Duration::days(7));
    let admin = admin(&hour, "acme").await;
    let old = create(&hour, &admin, card(Some("123"))).await;
    let recent = create(&hour, &admin, card(Some("456"))).await;
    // Created long ago (the row's own time, as both backends read it).
    t.execute(&format!(
        "UPDATE tokens SET created_at = '2026-01-01 00:00:00' WHERE id = '{old}'"
    ))
    .await;
    as_before_the_release(t).await;
    let report = hour.sweep().await.expect("sweep");
    assert_eq!(
        report.cvcs_removed, 1,
        "only the CVC older than the retention"
    );
    assert_eq!(cvc_of(&week, &admin, &old).await, None);
    assert_eq!(cvc_of(&week, &admin, &recent).await, Some(json!("456")));
}
