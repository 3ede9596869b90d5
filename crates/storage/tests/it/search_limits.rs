//! At the storage boundary on both backends: a metadata search over 10,000
//! tokens that all share ten pairs answers within the statement time limit (its cost follows
//! its rarest pair), and a statement that runs past the limit is stopped and reported as
//! [`StoreError::Timeout`] (503), leaving the pool usable.

use std::time::Duration;

use tessera_domain::{
    store::{ContainerScope, StoreError, TokenSearch, TokenSearching},
    PageRequest, TenantId,
};
use tessera_storage::{Backend, Database, PoolOptions, DEFAULT_QUERY_TIMEOUT};
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    ten_common_pairs_over_ten_thousand_tokens_answer_within_the_limit,
    a_statement_past_the_limit_is_stopped_as_a_timeout,
);

const TOKENS: usize = 10_000;
const PAIRS: usize = 10;

/// `TOKENS` tokens of one tenant, each with the pairs `k1=v` … `k10=v`, written in bulk
/// with the backend's own series generator (the API would take minutes).
async fn seed(t: &TestDatabase) -> TenantId {
    let tenant = TenantId::new();
    let series = match t.db.backend() {
        Backend::Postgres => format!("SELECT g AS n FROM generate_series(1, {TOKENS}) g"),
        Backend::Sqlite => format!(
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {TOKENS}) \
             SELECT n FROM s"
        ),
    };
    let id = "'00000000-0000-4000-8000-' || substr('000000000000' || n, -12, 12)";
    let pg_id = "'00000000-0000-4000-8000-' || lpad(n::text, 12, '0')";
    let id = if t.db.backend() == Backend::Postgres {
        pg_id
    } else {
        id
    };
    t.execute(&format!(
        "INSERT INTO tenants (tenant_id, name, wrapped_data_key, created_at) \
         VALUES ('{tenant}', 'seeded', '', CURRENT_TIMESTAMP)"
    ))
    .await;
    t.execute(&format!(
        "INSERT INTO tokens (tenant_id, id, token_type, container, metadata, data_ciphertext, \
           created_by, created_at, modified_by, modified_at, fingerprint) \
         SELECT '{tenant}', {id}, 'token', '/general/high/', '{{}}', '', '{tenant}', \
           CURRENT_TIMESTAMP, '{tenant}', CURRENT_TIMESTAMP, '' FROM ({series}) s"
    ))
    .await;
    for k in 1..=PAIRS {
        t.execute(&format!(
            "INSERT INTO token_metadata (tenant_id, token_id, key, value, created_at) \
             SELECT '{tenant}', {id}, 'k{k}', 'v', CURRENT_TIMESTAMP FROM ({series}) s"
        ))
        .await;
    }
    tenant
}

fn pairs(n: usize) -> TokenSearch {
    TokenSearch {
        metadata: (1..=n)
            .map(|k| (format!("k{k}"), "v".to_string()))
            .collect(),
        ..TokenSearch::default()
    }
}

async fn ten_common_pairs_over_ten_thousand_tokens_answer_within_the_limit(t: &TestDatabase) {
    let tenant = seed(t).await;
    let page = PageRequest::new(Some(1), Some(100)).expect("page");
    let found =
        t.db.search_tokens(tenant, &pairs(PAIRS), &ContainerScope::All, page)
            .await
            .unwrap_or_else(|e| panic!("within {DEFAULT_QUERY_TIMEOUT:?}: {e}"));
    assert_eq!(found.total_items, TOKENS as u64);
    assert_eq!(found.items.len(), 100);
    let containers =
        t.db.search_containers(tenant, &pairs(PAIRS))
            .await
            .expect("containers");
    assert_eq!(containers.len(), 1);
    // A pair nobody has ends the search before any join.
    let mut none = pairs(PAIRS);
    none.metadata.push(("k404".into(), "v".into()));
    let empty =
        t.db.search_tokens(tenant, &none, &ContainerScope::All, page)
            .await
            .expect("empty");
    assert_eq!(empty.total_items, 0);
}

async fn a_statement_past_the_limit_is_stopped_as_a_timeout(t: &TestDatabase) {
    let tenant = seed(t).await;
    let strict = Database::connect(
        &t.url,
        PoolOptions {
            max_connections: 1,
            query_timeout: Some(Duration::from_millis(1)),
        },
    )
    .await
    .expect("connect");
    let page = PageRequest::new(Some(1), Some(100)).expect("page");
    // Counting 10,000 tokens, each probed for nine pairs, takes far longer than a
    // millisecond on either backend. Twice: the pool of one connection keeps serving (and
    // stopping) statements after the first was stopped.
    for _ in 0..2 {
        let slow = strict
            .search_tokens(tenant, &pairs(PAIRS), &ContainerScope::All, page)
            .await;
        assert!(matches!(slow, Err(StoreError::Timeout(_))), "{slow:?}");
    }
}
