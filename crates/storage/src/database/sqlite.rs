//! SQLite's side of [`Database`](super::Database): the connection types (a blocking-pool
//! connection for writes and scans, one on the calling thread for point reads), their settings,
//! and the owner-only database file.

use std::{path::Path, sync::Arc};

use diesel::{sqlite::SqliteConnection, ConnectionError};
use diesel_async::{
    pooled_connection::{
        deadpool::Pool, AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
    },
    sync_connection_wrapper::{SpawnBlocking, SyncConnectionWrapper},
    AsyncConnection, SimpleAsyncConnection,
};
use futures_util::{future::BoxFuture, FutureExt};
use tessera_domain::store::StoreError;

use super::{checkout, PoolOptions, Pools, WriteTurn};

/// At least this many SQLite read connections: one per serving thread of a small machine, each
/// held only for the microseconds of a point read.
const SQLITE_MIN_READERS: usize = 8;
/// SQLite waits this long for a competing writer before giving up with SQLITE_BUSY.
pub(super) const SQLITE_BUSY_TIMEOUT_MS: u32 = 5_000;

/// The SQLite connection type for writes and scans: diesel's synchronous connection run on a
/// blocking thread, so a writer waiting for SQLite's lock never stalls a serving thread.
pub(crate) type SqliteConn = SyncConnectionWrapper<SqliteConnection>;

/// The SQLite connection type for point reads: the same connection run on the calling thread.
pub(crate) type SqliteReadConn = SyncConnectionWrapper<SqliteConnection, OnCallingThread>;

/// A [`SpawnBlocking`] that runs the task at once on the calling thread.
///
/// Why: a point read by primary key or unique index in WAL mode takes a few microseconds and
/// never waits for a writer (readers see the last commit), while a hop to tokio's blocking pool
/// and back costs two thread wake-ups — on a cold detokenization that hop, three times per
/// request, was most of the request's time. The future it returns is already complete, so a
/// caller that drops it can never leave a query running on a connection.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OnCallingThread;

impl SpawnBlocking for OnCallingThread {
    fn spawn_blocking<'a, R>(
        &mut self,
        task: impl FnOnce() -> R + Send + 'static,
    ) -> BoxFuture<'a, Result<R, Box<dyn std::error::Error + Send + Sync + 'static>>>
    where
        R: Send + 'static,
    {
        std::future::ready(Ok(task())).boxed()
    }

    fn get_runtime() -> Self {
        Self
    }
}

/// The pools of the SQLite file at `path`, created owner-only (with its directory) if missing
/// and switched to WAL.
pub(super) async fn open_pools(path: &Path, options: PoolOptions) -> Result<Pools, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    create_private_file(path)?;
    crate::query_timeout::limit_sqlite(path, options.query_timeout);
    // Connections are not pinged at checkout: nothing breaks an open SQLite file.
    let mut config = ManagerConfig::<SqliteConn>::default();
    config.custom_setup = Box::new(|url| establish_sqlite(url.to_string()).boxed());
    config.recycling_method = RecyclingMethod::Fast;
    let manager = AsyncDieselConnectionManager::new_with_config(sqlite_path(path)?, config);
    let pool = Pool::builder(manager)
        .max_size(options.max_connections)
        .build()
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let mut conn = checkout(&pool).await?;
    conn.batch_execute("PRAGMA journal_mode = WAL;")
        .await
        .map_err(|e| StoreError::Unavailable(format!("enabling WAL: {e}")))?;
    let mut config = ManagerConfig::<SqliteReadConn>::default();
    config.custom_setup = Box::new(|url| establish_sqlite_reader(url.to_string()).boxed());
    config.recycling_method = RecyclingMethod::Fast;
    let manager = AsyncDieselConnectionManager::new_with_config(sqlite_path(path)?, config);
    let reads = Pool::builder(manager)
        .max_size(options.max_connections.max(SQLITE_MIN_READERS))
        .build()
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    Ok(Pools::Sqlite {
        pool,
        reads,
        writes: WriteTurn::default(),
        creates: Arc::default(),
    })
}

/// Creates a missing SQLite file owner-only (0600); SQLite gives its `-wal`/`-shm` files the
/// same mode. Token data is encrypted regardless, but nothing in the file is for other users.
fn create_private_file(path: &Path) -> Result<(), StoreError> {
    if path.exists() {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Unavailable(format!(
            "cannot create {}: {e}",
            path.display()
        ))),
    }
}

pub(super) fn sqlite_path(path: &Path) -> Result<String, StoreError> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| StoreError::Unavailable("the SQLite path is not valid UTF-8".into()))
}

/// The per-connection settings every SQLite connection that writes needs.
pub(super) fn sqlite_settings() -> String {
    format!(
        "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA secure_delete = ON;"
    )
}

/// Opens a SQLite connection with the per-connection settings every connection needs.
async fn establish_sqlite(path: String) -> diesel::ConnectionResult<SqliteConn> {
    let mut conn = SqliteConn::establish(&path).await?;
    conn.batch_execute(&sqlite_settings())
        .await
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// Opens a read-only SQLite connection for point reads on the calling thread. `query_only`
/// makes any write on it fail, so a query routed here by mistake cannot take the write lock.
async fn establish_sqlite_reader(path: String) -> diesel::ConnectionResult<SqliteReadConn> {
    let mut conn = SqliteReadConn::establish(&path).await?;
    conn.batch_execute(&format!(
        "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}; PRAGMA foreign_keys = ON; PRAGMA query_only = ON;"
    ))
    .await
    .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}
