//! Connection pools for the two backends, migrations, and the glue that lets one query body
//! serve both.

use std::{path::Path, sync::Arc, time::Duration};

use diesel::{sqlite::SqliteConnection, Connection as _, ConnectionError, RunQueryDsl as _};
use diesel_async::{
    async_connection_wrapper::AsyncConnectionWrapper,
    pooled_connection::{
        deadpool::Pool, AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
    },
    sync_connection_wrapper::{SpawnBlocking, SyncConnectionWrapper},
    AsyncConnection, AsyncPgConnection, SimpleAsyncConnection,
};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use futures_util::{future::BoxFuture, FutureExt};
use tessera_domain::{store::StoreError, Page, PageRequest};
use thread_local::ThreadLocal;

use crate::url::DatabaseUrl;

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// How long a caller waits for a pooled connection before the store reports itself unavailable.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);
/// At least this many SQLite read connections: one per serving thread of a small machine, each
/// held only for the microseconds of a point read.
const SQLITE_MIN_READERS: usize = 8;
/// SQLite waits this long for a competing writer before giving up with SQLITE_BUSY.
const SQLITE_BUSY_TIMEOUT_MS: u32 = 5_000;
/// Arbitrary constant naming the advisory lock that serialises concurrent migrators.
const MIGRATION_LOCK_ID: i64 = 0x7e55_e7a0;

/// Connections each serving thread keeps to PostgreSQL for point reads (see [`Pools`]).
const POSTGRES_READS_PER_THREAD: usize = 4;

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

/// Which database engine backs a [`Database`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// The default limit on one statement's running time (`--query-timeout`).
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Pool sizing and per-connection limits.
#[derive(Debug, Clone, Copy)]
pub struct PoolOptions {
    /// Largest number of open connections.
    pub max_connections: usize,
    /// Longest any one statement may run before it is stopped (`None`: no limit). See
    /// [`crate::query_timeout`].
    pub query_timeout: Option<Duration>,
}

impl PoolOptions {
    /// Sensible defaults per backend: SQLite has one writer at a time, so a small pool; on
    /// PostgreSQL enough connections to keep both cores busy while requests wait on I/O.
    pub fn default_for(url: &DatabaseUrl) -> Self {
        let query_timeout = Some(DEFAULT_QUERY_TIMEOUT);
        match url {
            DatabaseUrl::Sqlite { .. } => Self {
                max_connections: 4,
                query_timeout,
            },
            DatabaseUrl::Postgres { .. } => Self {
                max_connections: 16,
                query_timeout,
            },
        }
    }
}

/// The turn to write to a SQLite database, shared by every writer of one process.
///
/// SQLite lets one connection write at a time. A connection that finds the lock taken retries
/// from its busy handler, which sleeps between attempts (1 ms, growing to 100 ms): under
/// concurrent writes that sleeping, not the writing, set the latency. So the writers of one
/// process queue here first, in arrival order, and meet the lock free; the busy timeout still
/// covers writers of other processes (a gateway and an API on one file). See
/// docs/operations.md.
#[derive(Clone, Default)]
pub(crate) struct WriteTurn(Arc<tokio::sync::Mutex<()>>);

impl WriteTurn {
    /// Waits for this process's turn to write; the turn ends when the guard is dropped.
    pub(crate) async fn take(&self) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.0).lock_owned().await
    }
}

/// The pools of one database.
///
/// Point reads (a token, a key, an application by id or key hash: what a cold proxy request
/// needs) take a different path from everything else, so that they cost no thread hop:
/// - on SQLite, a pool of read-only connections run on the calling thread (WAL lets readers run
///   beside the one writer); writes and scans keep the blocking-pool connections;
/// - on PostgreSQL, each thread that reads keeps its own small pool, whose connections' I/O
///   tasks run on that thread's runtime — a serving thread's query goes out and comes back on
///   the same core instead of through another runtime's threads.
#[derive(Clone)]
pub(crate) enum Pools {
    Sqlite {
        /// Writes and scans, on tokio's blocking pool.
        pool: Pool<SqliteConn>,
        /// Read-only connections for point reads, on the calling thread.
        reads: Pool<SqliteReadConn>,
        /// The turn to write, taken by every write of this process ([`with_write_conn!`]).
        writes: WriteTurn,
        /// Token creates waiting for the turn, written together by whoever gets it.
        creates: Arc<crate::tokens::CreateQueue>,
    },
    Postgres {
        /// Writes and scans.
        pool: Pool<AsyncPgConnection>,
        /// Point reads: one small pool per calling thread.
        reads: Arc<PerThreadPools>,
    },
}

/// PostgreSQL pools, one per thread that reads, created on first use.
pub(crate) struct PerThreadPools {
    url: String,
    query_timeout: Option<Duration>,
    pools: ThreadLocal<Pool<AsyncPgConnection>>,
}

impl PerThreadPools {
    /// This thread's pool.
    pub(crate) fn local(&self) -> Result<&Pool<AsyncPgConnection>, StoreError> {
        self.pools.get_or_try(|| {
            Pool::builder(postgres_manager(&self.url, self.query_timeout))
                .max_size(POSTGRES_READS_PER_THREAD)
                .build()
                .map_err(|e| StoreError::Unavailable(e.to_string()))
        })
    }
}

/// A PostgreSQL connection manager. Connections are not pinged at checkout (a `SELECT 1` round
/// trip before every query): a connection whose socket closed is known to be broken and is
/// replaced, and a query on one that broke in between fails like any other database error.
/// Each new connection gets the statement time limit.
fn postgres_manager(
    url: &str,
    query_timeout: Option<Duration>,
) -> AsyncDieselConnectionManager<AsyncPgConnection> {
    let mut config = ManagerConfig::<AsyncPgConnection>::default();
    config.recycling_method = RecyclingMethod::Fast;
    let setup = crate::query_timeout::postgres_setup(query_timeout);
    config.custom_setup = Box::new(move |url| {
        let setup = setup.clone();
        async move {
            let mut conn = AsyncPgConnection::establish(url).await?;
            conn.batch_execute(&setup)
                .await
                .map_err(ConnectionError::CouldntSetupConfiguration)?;
            Ok(conn)
        }
        .boxed()
    });
    AsyncDieselConnectionManager::new_with_config(url, config)
}

/// A connection pool on SQLite or PostgreSQL implementing every storage trait of the domain.
#[derive(Clone)]
pub struct Database {
    pub(crate) pools: Pools,
    url: DatabaseUrl,
    query_timeout: Option<Duration>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Opens a pool and checks that one connection can be made, so an unreachable database is
    /// reported at start-up rather than on the first request. SQLite files (and their
    /// directory) are created if missing and switched to WAL.
    pub async fn connect(url: &DatabaseUrl, options: PoolOptions) -> Result<Self, StoreError> {
        let pools = match url {
            DatabaseUrl::Sqlite { path } => {
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
                let manager =
                    AsyncDieselConnectionManager::new_with_config(sqlite_path(path)?, config);
                let pool = Pool::builder(manager)
                    .max_size(options.max_connections)
                    .build()
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                let mut conn = checkout(&pool).await?;
                conn.batch_execute("PRAGMA journal_mode = WAL;")
                    .await
                    .map_err(|e| StoreError::Unavailable(format!("enabling WAL: {e}")))?;
                let mut config = ManagerConfig::<SqliteReadConn>::default();
                config.custom_setup =
                    Box::new(|url| establish_sqlite_reader(url.to_string()).boxed());
                config.recycling_method = RecyclingMethod::Fast;
                let manager =
                    AsyncDieselConnectionManager::new_with_config(sqlite_path(path)?, config);
                let reads = Pool::builder(manager)
                    .max_size(options.max_connections.max(SQLITE_MIN_READERS))
                    .build()
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                Pools::Sqlite {
                    pool,
                    reads,
                    writes: WriteTurn::default(),
                    creates: Arc::default(),
                }
            }
            DatabaseUrl::Postgres { url } => {
                let pool = Pool::builder(postgres_manager(url.as_str(), options.query_timeout))
                    .max_size(options.max_connections)
                    .build()
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                drop(checkout(&pool).await?);
                Pools::Postgres {
                    pool,
                    reads: Arc::new(PerThreadPools {
                        url: url.as_str().to_string(),
                        query_timeout: options.query_timeout,
                        pools: ThreadLocal::new(),
                    }),
                }
            }
        };
        Ok(Self {
            pools,
            url: url.clone(),
            query_timeout: options.query_timeout,
        })
    }

    /// A connection of its own, outside the pools, with the settings pooled connections get:
    /// for the audit writer, which keeps it (and its prepared statements) for its whole life.
    /// SQLite's is used synchronously by its owner; PostgreSQL's I/O runs on the runtime that
    /// calls this.
    pub(crate) async fn dedicated(&self) -> Result<Dedicated, StoreError> {
        let unavailable = |e: &dyn std::fmt::Display| StoreError::Unavailable(e.to_string());
        match &self.url {
            DatabaseUrl::Sqlite { path } => {
                let mut conn = SqliteConnection::establish(&sqlite_path(path)?)
                    .map_err(|e| unavailable(&e))?;
                diesel::connection::SimpleConnection::batch_execute(&mut conn, &sqlite_settings())
                    .map_err(|e| unavailable(&e))?;
                Ok(Dedicated::Sqlite(Box::new(conn)))
            }
            DatabaseUrl::Postgres { url } => {
                let mut conn = AsyncPgConnection::establish(url.as_str())
                    .await
                    .map_err(|e| unavailable(&e))?;
                conn.batch_execute(&crate::query_timeout::postgres_setup(self.query_timeout))
                    .await
                    .map_err(|e| unavailable(&e))?;
                Ok(Dedicated::Postgres(Box::new(conn)))
            }
        }
    }

    /// Runs raw SQL statements on a pooled connection: for operators' tooling and for tests
    /// that write rows as an older release would. Nothing in the service calls it.
    pub async fn batch_execute(&self, sql: &str) -> Result<(), StoreError> {
        match &self.pools {
            Pools::Sqlite { pool, .. } => checkout(pool).await?.batch_execute(sql).await,
            Pools::Postgres { pool, .. } => checkout(pool).await?.batch_execute(sql).await,
        }
        .map_err(|e| StoreError::Backend(e.to_string()))
    }

    /// On SQLite, waits for this process's turn to write ([`WriteTurn`]), held until the guard
    /// is dropped; `None` at once on PostgreSQL.
    pub(crate) async fn take_write_turn(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        match &self.pools {
            Pools::Sqlite { writes, .. } => Some(writes.take().await),
            Pools::Postgres { .. } => None,
        }
    }

    /// This process's turn to write, on SQLite ([`WriteTurn`]); `None` on PostgreSQL.
    pub(crate) fn write_turn(&self) -> Option<WriteTurn> {
        match &self.pools {
            Pools::Sqlite { writes, .. } => Some(writes.clone()),
            Pools::Postgres { .. } => None,
        }
    }

    /// The URL this database was opened with.
    pub fn url(&self) -> &DatabaseUrl {
        &self.url
    }

    /// The engine in use.
    pub fn backend(&self) -> Backend {
        match self.pools {
            Pools::Sqlite { .. } => Backend::Sqlite,
            Pools::Postgres { .. } => Backend::Postgres,
        }
    }

    /// Runs pending embedded migrations for this backend on a blocking thread (diesel's
    /// migration harness is synchronous). On PostgreSQL an advisory lock serialises processes
    /// that start at the same time.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.migrate_through(None).await
    }

    /// Runs pending migrations up to and including the one whose directory name starts with
    /// `last` (all of them with `None`): for tests that build a database as an older release
    /// left it, then migrate it.
    pub async fn migrate_through(&self, last: Option<&str>) -> Result<(), StoreError> {
        let url = self.url.clone();
        let last = last.map(str::to_string);
        let result = tokio::task::spawn_blocking(move || -> Result<(), StoreError> {
            match url {
                DatabaseUrl::Sqlite { path } => {
                    let mut conn = SqliteConnection::establish(&sqlite_path(&path)?)
                        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                    // secure_delete: a migration that moves or drops data (clear proxy keys)
                    // leaves zeros, not the old bytes, in the freed pages.
                    diesel::sql_query(format!("PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"))
                        .execute(&mut conn)
                        .map_err(migration_error)?;
                    diesel::sql_query("PRAGMA secure_delete = ON")
                        .execute(&mut conn)
                        .map_err(migration_error)?;
                    run_migrations(&mut conn, SQLITE_MIGRATIONS, last.as_deref())?;
                }
                DatabaseUrl::Postgres { url } => {
                    let mut conn = <AsyncConnectionWrapper<AsyncPgConnection> as diesel::Connection>::establish(&url)
                        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                    diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK_ID})"))
                        .execute(&mut conn)
                        .map_err(migration_error)?;
                    let outcome = run_migrations(&mut conn, POSTGRES_MIGRATIONS, last.as_deref());
                    diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_ID})"))
                        .execute(&mut conn)
                        .map_err(migration_error)?;
                    outcome?;
                }
            }
            Ok(())
        })
        .await;
        result.map_err(|e| StoreError::Backend(format!("migration task failed: {e}")))?
    }
}

/// Runs `source`'s pending migrations in order, stopping after the one named `last…`.
fn run_migrations<DB: diesel::backend::Backend>(
    conn: &mut impl MigrationHarness<DB>,
    source: EmbeddedMigrations,
    last: Option<&str>,
) -> Result<(), StoreError> {
    let Some(last) = last else {
        return conn
            .run_pending_migrations(source)
            .map(|_| ())
            .map_err(|e| StoreError::Backend(format!("migration failed: {e}")));
    };
    let pending = conn
        .pending_migrations(source)
        .map_err(|e| StoreError::Backend(format!("migration failed: {e}")))?;
    for migration in pending {
        let name = migration.name().to_string();
        conn.run_migration(&*migration)
            .map_err(|e| StoreError::Backend(format!("migration {name} failed: {e}")))?;
        if name.starts_with(last) {
            break;
        }
    }
    Ok(())
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

fn migration_error(e: diesel::result::Error) -> StoreError {
    StoreError::Backend(format!("migration failed: {e}"))
}

fn sqlite_path(path: &Path) -> Result<String, StoreError> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| StoreError::Unavailable("the SQLite path is not valid UTF-8".into()))
}

/// A connection outside the pools ([`Database::dedicated`]).
pub(crate) enum Dedicated {
    Sqlite(Box<SqliteConnection>),
    Postgres(Box<AsyncPgConnection>),
}

/// The per-connection settings every SQLite connection that writes needs.
fn sqlite_settings() -> String {
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

/// Takes a connection from `pool`, waiting at most [`CHECKOUT_TIMEOUT`].
pub(crate) async fn checkout<M>(
    pool: &deadpool::managed::Pool<M>,
) -> Result<deadpool::managed::Object<M>, StoreError>
where
    M: deadpool::managed::Manager,
    M::Error: std::fmt::Display,
{
    match tokio::time::timeout(CHECKOUT_TIMEOUT, pool.get()).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(StoreError::Unavailable(e.to_string())),
        Err(_) => Err(StoreError::Unavailable(
            "timed out waiting for a database connection".into(),
        )),
    }
}

/// The row of a point read by a unique key, if any.
///
/// Point reads load rather than call diesel's `first`: its `LIMIT ?` is a bound parameter that
/// SQLite's planner treats as relevant to the plan, so every new binding expires the cached
/// statement and each call was parsed and planned again (half of a cold proxy request's CPU).
/// A unique key matches at most one row, so no limit is needed.
pub(crate) fn only_row<T>(rows: Vec<T>) -> Option<T> {
    rows.into_iter().next()
}

/// `LIMIT` and `OFFSET` of a page.
pub(crate) fn window(page: PageRequest) -> (i64, i64) {
    (
        i64::from(page.size()),
        i64::try_from(page.offset()).unwrap_or(i64::MAX),
    )
}

/// A page of `rows` (out of `total`), each converted to its domain type.
pub(crate) fn page_of<R, T>(
    rows: Vec<R>,
    total: i64,
    page: PageRequest,
    convert: impl FnMut(R) -> Result<T, StoreError>,
) -> Result<Page<T>, StoreError> {
    Page {
        items: rows,
        total_items: u64::try_from(total).unwrap_or(0),
        request: page,
    }
    .try_map(convert)
}

/// Converts diesel's errors into the domain's, keeping constraint violations apart.
pub(crate) trait DbResultExt<T> {
    /// Maps the error side.
    fn db(self) -> Result<T, StoreError>;
}

impl<T> DbResultExt<T> for Result<T, diesel::result::Error> {
    fn db(self) -> Result<T, StoreError> {
        use diesel::result::{DatabaseErrorKind as Kind, Error};
        self.map_err(|e| match e {
            Error::DatabaseError(Kind::UniqueViolation | Kind::ForeignKeyViolation, info) => {
                StoreError::Conflict(info.message().to_string())
            }
            Error::DatabaseError(Kind::ClosedConnection | Kind::UnableToSendCommand, info) => {
                StoreError::Unavailable(info.message().to_string())
            }
            Error::DatabaseError(_, info) if crate::query_timeout::is_timeout(info.message()) => {
                StoreError::Timeout(info.message().to_string())
            }
            other => StoreError::Backend(other.to_string()),
        })
    }
}

/// Runs `$body` with `$conn` bound to a pooled connection of whichever backend `$db` uses.
/// The body is expanded once per backend, so the same query source is compiled for both.
macro_rules! with_conn {
    ($db:expr, |$conn:ident| $body:expr) => {
        match &$db.pools {
            $crate::database::Pools::Sqlite { pool, .. } => {
                let mut object = $crate::database::checkout(pool).await?;
                let $conn: &mut $crate::database::SqliteConn = &mut object;
                $body
            }
            $crate::database::Pools::Postgres { pool, .. } => {
                let mut object = $crate::database::checkout(pool).await?;
                let $conn: &mut diesel_async::AsyncPgConnection = &mut object;
                $body
            }
        }
    };
}
pub(crate) use with_conn;

/// Like [`with_conn!`], for a statement or transaction that writes: on SQLite it first takes
/// the process's [`WriteTurn`], held until `$body` is done.
macro_rules! with_write_conn {
    ($db:expr, |$conn:ident| $body:expr) => {{
        let _turn = $db.take_write_turn().await;
        $crate::database::with_conn!($db, |$conn| $body)
    }};
}
pub(crate) use with_write_conn;

/// Like [`with_conn!`], for a point read (by primary key or unique index, a handful of rows):
/// on the calling thread's read path of [`Pools`]. Nothing that writes or scans goes here.
macro_rules! with_read_conn {
    ($db:expr, |$conn:ident| $body:expr) => {
        match &$db.pools {
            $crate::database::Pools::Sqlite { reads, .. } => {
                let mut object = $crate::database::checkout(reads).await?;
                let $conn: &mut $crate::database::SqliteReadConn = &mut object;
                $body
            }
            $crate::database::Pools::Postgres { reads, .. } => {
                let mut object = $crate::database::checkout(reads.local()?).await?;
                let $conn: &mut diesel_async::AsyncPgConnection = &mut object;
                $body
            }
        }
    };
}
pub(crate) use with_read_conn;

/// The one row `$query` finds by a unique key (a primary key, or a credential's lookup hash),
/// loaded as `$row` on the read path ([`with_read_conn!`]); `None` when there is none. The
/// lookup by key of applications and proxies, and every point read by id, are this one read.
/// The caller has `QueryDsl`, `SelectableHelper` and [`DbResultExt`] in scope.
macro_rules! read_unique_row {
    ($db:expr, $query:expr, $row:ty) => {
        $crate::database::with_read_conn!($db, |conn| {
            $query
                .select(<$row>::as_select())
                .load::<$row>(conn)
                .await
                .db()
                .map($crate::database::only_row)
        })
    };
}
pub(crate) use read_unique_row;
