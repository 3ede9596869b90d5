//! Appending a batch of events, one block per chain, in one transaction.
//!
//! Each chain is written inside its own savepoint: a chain whose block cannot be stored (a
//! record already at its next position, planted or left by a failure) is rolled back alone
//! and reported in its [`ChainAppend`], while the other chains commit (attack finding 2). The
//! head is locked first ([`lock_head!`]), the events sealed after it, the block inserted and
//! the head advanced. On SQLite the whole transaction runs in one hop to the blocking pool
//! (diesel-async's SQLite wrapper would take one hop per statement); on PostgreSQL as async
//! round trips.

use std::collections::BTreeMap;

use diesel::{ExpressionMethods, QueryDsl};
use tessera_domain::{
    audit::{self, AuditEvent, ChainAppend, ChainedEvent},
    store::StoreError,
};

use super::rows::{chain_key, chain_tenant, head, BlockRow};
use crate::{
    database::{checkout, Database, DbResultExt, Pools},
    schema::audit_blocks,
};

/// The events of a batch by chain key, in key order (the order heads are locked in).
type ByChain = BTreeMap<String, Vec<AuditEvent>>;

fn by_chain(events: &[AuditEvent]) -> ByChain {
    let mut by_chain = ByChain::new();
    for event in events {
        by_chain
            .entry(chain_key(event.tenant_id))
            .or_default()
            .push(event.clone());
    }
    by_chain
}

/// One chain's outcome, its error converted.
fn outcome(
    key: &str,
    result: Result<Vec<ChainedEvent>, diesel::result::Error>,
) -> Result<ChainAppend, StoreError> {
    Ok(ChainAppend {
        tenant_id: chain_tenant(key)?,
        result: result.db(),
    })
}

/// [`tessera_domain::audit::AuditStore::append_audit_events`].
pub(super) async fn append(
    db: &Database,
    events: &[AuditEvent],
) -> Result<Vec<ChainAppend>, StoreError> {
    let by_chain = by_chain(events);
    let results = match &db.pools {
        Pools::Sqlite { pool, .. } => {
            let mut conn = checkout(pool).await?;
            conn.spawn_blocking(move |conn| {
                conn.immediate_transaction(|conn| sqlite::append_in(conn, &by_chain))
            })
            .await
            .db()?
        }
        Pools::Postgres { pool, .. } => {
            let mut conn = checkout(pool).await?;
            postgres::append_in(&mut conn, &by_chain).await.db()?
        }
    };
    results
        .into_iter()
        .map(|(key, result)| outcome(&key, result))
        .collect()
}

type Results = Vec<(String, Result<Vec<ChainedEvent>, diesel::result::Error>)>;

mod sqlite {
    use diesel::{Connection, RunQueryDsl, SqliteConnection};

    use super::*;

    fn append_chain(
        conn: &mut SqliteConnection,
        key: &str,
        events: &[AuditEvent],
    ) -> Result<Vec<ChainedEvent>, diesel::result::Error> {
        ensure_head!(key).execute(conn)?;
        lock_head!(key).execute(conn)?;
        let mut head = head(read_head!(key).get_result(conn)?)?;
        let (block, chained) = audit::seal(&mut head, events);
        diesel::insert_into(audit_blocks::table)
            .values(BlockRow::from(&block))
            .execute(conn)?;
        write_head!(key, head).execute(conn)?;
        Ok(chained)
    }

    pub(super) fn append_in(
        conn: &mut SqliteConnection,
        by_chain: &ByChain,
    ) -> Result<Results, diesel::result::Error> {
        Ok(by_chain
            .iter()
            .map(|(key, events)| {
                // A nested transaction is a savepoint: a failure rolls back this chain only.
                let result = conn.transaction(|conn| append_chain(conn, key, events));
                (key.clone(), result)
            })
            .collect())
    }
}

mod postgres {
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

    use super::*;

    async fn append_chain(
        conn: &mut AsyncPgConnection,
        key: &str,
        events: &[AuditEvent],
    ) -> Result<Vec<ChainedEvent>, diesel::result::Error> {
        ensure_head!(key).execute(conn).await?;
        lock_head!(key).execute(conn).await?;
        let mut head = head(read_head!(key).get_result(conn).await?)?;
        let (block, chained) = audit::seal(&mut head, events);
        diesel::insert_into(audit_blocks::table)
            .values(BlockRow::from(&block))
            .execute(conn)
            .await?;
        write_head!(key, head).execute(conn).await?;
        Ok(chained)
    }

    pub(super) async fn append_in(
        conn: &mut AsyncPgConnection,
        by_chain: &ByChain,
    ) -> Result<Results, diesel::result::Error> {
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let mut results = Vec::with_capacity(by_chain.len());
            for (key, events) in by_chain {
                // A nested transaction is a savepoint: a failure rolls back this chain only.
                let result = conn
                    .transaction::<_, diesel::result::Error, _>(async |conn| {
                        append_chain(conn, key, events).await
                    })
                    .await;
                results.push((key.clone(), result));
            }
            Ok(results)
        })
        .await
    }
}
