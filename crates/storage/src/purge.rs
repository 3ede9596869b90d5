//! Making sure that what was overwritten or deleted is gone from the database's own files, so
//! that a copy of them taken afterwards does not hold it (docs/operations.md, "Deleting a
//! tenant"): the destroyed data keys of a deleted tenant above all.
//!
//! - SQLite (with `secure_delete`, which zeroes freed space): the write-ahead log is
//!   checkpointed into the database file and truncated, so the old pages are overwritten and the
//!   log no longer holds them.
//! - PostgreSQL: an `UPDATE` or `DELETE` leaves the old row version in the table's pages until
//!   vacuum, and vacuum keeps it while any transaction that may still see it is open (another
//!   session's snapshot, a replication slot's). So this waits until no snapshot older than the
//!   change is held, then `VACUUM FULL` rewrites the table into new files holding the live rows
//!   alone. PostgreSQL's write-ahead log and its archives keep the old rows until they are
//!   recycled or expire.

use std::time::{Duration, Instant};

use diesel::{
    sql_types::{BigInt, Integer},
    QueryableByName,
};
use diesel_async::RunQueryDsl;
use tessera_domain::store::StoreError;

use crate::database::{with_conn, with_write_conn, Backend, Database, DbResultExt};

/// Tables whose freed space is purged (the statement names the table: only these). Only the
/// small table of keys: a tenant's other rows are ciphertext that nothing opens once its keys
/// are gone, and rewriting the tokens table would lock every tenant out of it.
const PURGEABLE: [&str; 1] = ["tenants"];

/// How many times a checkpoint that readers kept from finishing is tried.
const CHECKPOINT_TRIES: u32 = 20;

/// How long a PostgreSQL purge waits for older snapshots to be released.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(60);

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Checkpoint {
    #[diesel(sql_type = Integer)]
    busy: i32,
}

/// Makes the freed space of `table` unrecoverable from the database's files.
pub(crate) async fn purge_freed_space(db: &Database, table: &str) -> Result<(), StoreError> {
    if !PURGEABLE.contains(&table) {
        return Err(StoreError::Backend(format!("{table} is not purged")));
    }
    match db.backend() {
        Backend::Postgres => {
            wait_for_older_snapshots(db).await?;
            db.batch_execute(&format!("VACUUM FULL {table}")).await
        }
        Backend::Sqlite => {
            for _ in 0..CHECKPOINT_TRIES {
                let done: Vec<Checkpoint> = with_write_conn!(db, |conn| {
                    diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)")
                        .load(conn)
                        .await
                        .db()
                })?;
                if done.iter().all(|c| c.busy == 0) {
                    return Ok(());
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(StoreError::Backend(
                "the SQLite log could not be checkpointed: readers held it; run again".into(),
            ))
        }
    }
}

/// Waits until no other session, and no replication slot, holds a snapshot taken before now:
/// until then, vacuum must keep the row versions such a snapshot may see.
async fn wait_for_older_snapshots(db: &Database) -> Result<(), StoreError> {
    let started = Instant::now();
    let now: Vec<Count> = with_conn!(db, |conn| {
        diesel::sql_query("SELECT txid_current() % 4294967296 AS n")
            .load(conn)
            .await
            .db()
    })?;
    let now = now.into_iter().next().map_or(0, |c| c.n);
    loop {
        let older: Vec<Count> = with_conn!(db, |conn| {
            diesel::sql_query(
                "SELECT COUNT(*) AS n FROM ( \
                   SELECT backend_xmin AS x FROM pg_stat_activity \
                    WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL \
                   UNION ALL SELECT xmin FROM pg_replication_slots WHERE xmin IS NOT NULL \
                 ) held WHERE x::text::bigint <= $1",
            )
            .bind::<BigInt, _>(now)
            .load(conn)
            .await
            .db()
        })?;
        if older.into_iter().next().is_none_or(|c| c.n == 0) {
            return Ok(());
        }
        if started.elapsed() > SNAPSHOT_WAIT {
            return Err(StoreError::Backend(format!(
                "transactions older than the change are still open after {} s (see pg_stat_activity): run again once they end",
                SNAPSHOT_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
