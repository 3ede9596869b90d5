//! SQLite's WAL checkpoints, off the writers' path.
//!
//! By default the connection whose commit takes the WAL past 1,000 pages copies the WAL back
//! into the database file and syncs it, inside that commit, while every other writer of the
//! process waits for its turn behind the `fsync`. So the connections that write run with
//! `wal_autocheckpoint = 0`, and a thread of the process runs a `PASSIVE` checkpoint on a
//! connection of its own every [`INTERVAL`]: it copies what no reader still needs without
//! taking the write lock, and the writer after it starts the WAL from the beginning again. See
//! docs/operations.md ("SQLite's write-ahead log").

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use diesel::{connection::SimpleConnection, Connection, SqliteConnection};
use tessera_domain::store::StoreError;

/// How often the checkpoint runs.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// The thread that checkpoints one SQLite database; it stops when this is dropped.
pub(crate) struct Checkpointer {
    stop: Arc<AtomicBool>,
}

impl Checkpointer {
    /// Starts checkpointing the database at `path` (a connection with `busy_timeout_ms`).
    pub(crate) fn start(path: &str, busy_timeout_ms: u32) -> Result<Self, StoreError> {
        let unavailable = |e: &dyn std::fmt::Display| StoreError::Unavailable(e.to_string());
        let mut conn = SqliteConnection::establish(path).map_err(|e| unavailable(&e))?;
        conn.batch_execute(&format!("PRAGMA busy_timeout = {busy_timeout_ms};"))
            .map_err(|e| unavailable(&e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(INTERVAL);
                    if let Err(e) = conn.batch_execute("PRAGMA wal_checkpoint(PASSIVE);") {
                        tracing::warn!(error = %e, "SQLite checkpoint failed; retrying");
                    }
                }
            })
            .map_err(|e| unavailable(&e))?;
        Ok(Self { stop })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Database, DatabaseUrl, PoolOptions};

    /// Writers never checkpoint, yet what they commit reaches the database file: the thread
    /// copies it back.
    #[tokio::test]
    async fn the_wal_reaches_the_database_file_without_a_writer_copying_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db.sqlite");
        let url = DatabaseUrl::Sqlite { path: path.clone() };
        let db = Database::connect(&url, PoolOptions::default_for(&url))
            .await
            .expect("open");
        db.batch_execute("CREATE TABLE filler (x BLOB);")
            .await
            .expect("table");
        let before = std::fs::metadata(&path).expect("file").len();
        for _ in 0..50 {
            db.batch_execute("INSERT INTO filler VALUES (randomblob(65536));")
                .await
                .expect("insert");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::metadata(&path).expect("file").len() < before + 3_000_000 {
            assert!(
                std::time::Instant::now() < deadline,
                "the WAL was never copied back"
            );
            tokio::time::sleep(super::INTERVAL).await;
        }
    }
}
