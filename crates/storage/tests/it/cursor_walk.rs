//! The keyset walk behind cursor pages (docs/api.md "Cursor pages") on both backends: tokens
//! created in the same instant are told apart by id, so a walk returns each exactly once, in
//! the order `created_at` then id, both descending, with or without a metadata pair driving it.

use std::collections::BTreeMap;

use tessera_domain::{
    store::{ContainerScope, Position, StoredToken, TokenInserts, TokenSearch, TokenSearching},
    timestamp, ApplicationId, Container, TenantId, TokenId, TokenType,
};
use tessera_testkit::{backend_tests, db::TestDatabase};
use time::Duration;

backend_tests!(a_walk_tells_apart_tokens_created_in_the_same_instant);

/// A token of `tenant` created at `at`, tagged `walk: x`.
fn token_at(tenant: TenantId, at: time::OffsetDateTime) -> StoredToken {
    let by = ApplicationId::from_uuid(*tenant.as_uuid());
    StoredToken {
        id: TokenId::new(),
        tenant_id: tenant,
        token_type: TokenType::Token,
        container: Container::parse("/general/").expect("container"),
        metadata: BTreeMap::from([("walk".to_string(), "x".to_string())]),
        ciphertext: vec![1],
        created_by: by,
        created_at: at,
        modified_by: by,
        modified_at: at,
        fingerprint: "fp".to_string(),
        expires_at: None,
        destinations: None,
        search_indexes: None,
        fingerprint_expression: None,
        search_hashes: Vec::new(),
        holds_cvc: false,
        mask: None,
    }
}

/// Every token `search` finds, walked `limit` at a time from the positions the rows give back.
async fn walk(
    t: &TestDatabase,
    tenant: TenantId,
    search: &TokenSearch,
    limit: u32,
) -> Vec<TokenId> {
    let mut seen = vec![];
    let mut after = None;
    for _ in 0..100 {
        let rows =
            t.db.search_tokens_after(tenant, search, &ContainerScope::All, after, limit)
                .await
                .expect("walk");
        seen.extend(rows.iter().map(|r| r.id.clone()));
        match rows.last() {
            Some(last) if rows.len() == limit as usize => {
                after = Some(Position {
                    created_at: last.created_at,
                    id: last.id.clone(),
                })
            }
            _ => return seen,
        }
    }
    panic!("the walk did not end")
}

async fn a_walk_tells_apart_tokens_created_in_the_same_instant(t: &TestDatabase) {
    let tenant = TenantId::new();
    t.execute(&format!(
        "INSERT INTO tenants (tenant_id, name, wrapped_data_key, created_at) \
         VALUES ('{tenant}', 'walk', '', CURRENT_TIMESTAMP)"
    ))
    .await;
    // Microseconds: what both backends keep.
    let now = timestamp::now().replace_nanosecond(123_000).expect("time");
    let mut tokens: Vec<StoredToken> = (0..7).map(|_| token_at(tenant, now)).collect();
    tokens.extend((0..2).map(|_| token_at(tenant, now - Duration::seconds(1))));
    t.db.insert_tokens(&tokens).await.expect("insert");
    let mut expected: Vec<(time::OffsetDateTime, String, TokenId)> = tokens
        .iter()
        .map(|s| (s.created_at, s.id.to_string(), s.id.clone()))
        .collect();
    expected.sort_by(|a, b| (b.0, &b.1).cmp(&(a.0, &a.1)));
    let expected: Vec<TokenId> = expected.into_iter().map(|(_, _, id)| id).collect();
    let by_pair = TokenSearch {
        metadata: vec![("walk".to_string(), "x".to_string())],
        ..TokenSearch::default()
    };
    for search in [TokenSearch::default(), by_pair] {
        for limit in [1, 2, 3, 9, 10] {
            assert_eq!(
                walk(t, tenant, &search, limit).await,
                expected,
                "{search:?} {limit}"
            );
        }
    }
}
