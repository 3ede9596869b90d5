//! Making sure that what was overwritten or deleted is gone from the database's own files, so
//! that a copy of them taken afterwards does not hold it: the clear proxy secrets of an earlier
//! release (docs/operations.md, "Upgrading"), the destroyed data keys of a deleted tenant
//! (docs/operations.md, "Deleting a tenant").
//!
//! - SQLite runs with `secure_delete`, which zeroes freed space; what the write-ahead log still
//!   holds goes with a truncating checkpoint.
//! - PostgreSQL keeps an updated or deleted row's old version in the table's pages until the
//!   table is rewritten, and a rewrite keeps every row version that a snapshot older than the
//!   change may still see. So: take a transaction id newer than the (committed) change, wait
//!   until no other session's snapshot horizon (`backend_xmin`) or running transaction
//!   (`backend_xid`) is at or before it, then rewrite the tables with `VACUUM FULL`. Comparing
//!   ids rather than start times also covers a young transaction whose snapshot was taken while
//!   an old one still ran. PostgreSQL's write-ahead log and its archives keep the old rows until
//!   they are recycled or expire.

use std::time::Duration;

use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
use tessera_domain::store::StoreError;

use crate::database::{checkout, Database, Pools};

/// Tables whose freed space may be purged (the statement names the table: only these).
const PURGEABLE: [&str; 4] = ["proxies", "proxies_unsealed", "tenants", "tenant_data_keys"];

/// How many times, and how far apart, older snapshots are looked for before giving up (30 s).
const WAIT_ROUNDS: u32 = 150;
const WAIT: Duration = Duration::from_millis(200);

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Whether the purge reached every old row version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purged {
    /// Nothing older remains in the tables' files.
    Clean,
    /// Sessions holding older snapshots outlasted the wait: the tables were rewritten, but may
    /// still hold what those snapshots see; run again once they end.
    SnapshotsRemained,
}

/// Makes what was overwritten or deleted in `tables` unrecoverable from the database's files.
pub(crate) async fn purge_freed_space(
    db: &Database,
    tables: &[&str],
) -> Result<Purged, StoreError> {
    if let Some(table) = tables.iter().find(|t| !PURGEABLE.contains(t)) {
        return Err(StoreError::Backend(format!("{table} is not purged")));
    }
    let failed = |e: diesel::result::Error| StoreError::Backend(format!("purging: {e}"));
    match &db.pools {
        Pools::Postgres { pool, .. } => {
            let mut conn = checkout(pool).await?;
            conn.batch_execute(
                "DROP TABLE IF EXISTS tessera_purge_cutoff; \
                 CREATE TEMPORARY TABLE tessera_purge_cutoff AS \
                 SELECT pg_current_xact_id()::text::xid AS cutoff",
            )
            .await
            .map_err(failed)?;
            let mut purged = Purged::SnapshotsRemained;
            for _ in 0..WAIT_ROUNDS {
                let rows: Vec<Count> = diesel::sql_query(
                    "SELECT count(*) AS n FROM pg_stat_activity, tessera_purge_cutoff \
                     WHERE pid <> pg_backend_pid() \
                     AND ((backend_xmin IS NOT NULL AND age(backend_xmin) >= age(cutoff)) \
                       OR (backend_xid IS NOT NULL AND age(backend_xid) >= age(cutoff)))",
                )
                .load(&mut *conn)
                .await
                .map_err(failed)?;
                if rows.iter().all(|c| c.n == 0) {
                    purged = Purged::Clean;
                    break;
                }
                tokio::time::sleep(WAIT).await;
            }
            // A rewrite of a large table may outlast the per-statement limit of request
            // traffic; this connection lifts it and is then closed instead of pooled. One
            // statement each: VACUUM refuses to run inside a multi-statement string.
            // A rewrite waits for the table's exclusive lock, and every read of the table queues
            // behind it: give up after a few seconds rather than stall them behind a long reader.
            let mut statements = vec![
                "SET statement_timeout = 0".to_string(),
                "SET lock_timeout = '5s'".to_string(),
            ];
            statements.extend(tables.iter().map(|t| format!("VACUUM FULL {t}")));
            statements.push("DROP TABLE IF EXISTS tessera_purge_cutoff".into());
            let mut done = Ok(purged);
            for sql in &statements {
                if let Err(e) = conn.batch_execute(sql).await {
                    done = Err(failed(e));
                    break;
                }
            }
            drop(deadpool::managed::Object::take(conn));
            done
        }
        Pools::Sqlite { pool, .. } => checkout(pool)
            .await?
            .batch_execute("PRAGMA wal_checkpoint(TRUNCATE)")
            .await
            .map(|()| Purged::Clean)
            .map_err(failed),
    }
}
