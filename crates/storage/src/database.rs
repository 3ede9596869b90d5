//! Connection pools for the two backends, migrations, and the glue that lets one query body
//! serve both.

use std::{path::Path, time::Duration};

use diesel::{sqlite::SqliteConnection, Connection as _, ConnectionError, RunQueryDsl as _};
use diesel_async::{
    async_connection_wrapper::AsyncConnectionWrapper,
    pooled_connection::{deadpool::Pool, AsyncDieselConnectionManager, ManagerConfig},
    sync_connection_wrapper::SyncConnectionWrapper,
    AsyncConnection, AsyncPgConnection, SimpleAsyncConnection,
};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use futures_util::FutureExt;
use tessera_domain::{store::StoreError, Page, PageRequest};

use crate::url::DatabaseUrl;

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// How long a caller waits for a pooled connection before the store reports itself unavailable.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);
/// SQLite waits this long for a competing writer before giving up with SQLITE_BUSY.
const SQLITE_BUSY_TIMEOUT_MS: u32 = 5_000;
/// Arbitrary constant naming the advisory lock that serialises concurrent migrators.
const MIGRATION_LOCK_ID: i64 = 0x7e55_e7a0;

/// The SQLite connection type: diesel's synchronous connection run on a blocking thread.
pub(crate) type SqliteConn = SyncConnectionWrapper<SqliteConnection>;

/// Which database engine backs a [`Database`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// Pool sizing.
#[derive(Debug, Clone, Copy)]
pub struct PoolOptions {
    /// Largest number of open connections.
    pub max_connections: usize,
}

impl PoolOptions {
    /// Sensible defaults per backend: SQLite has one writer at a time, so a small pool; on
    /// PostgreSQL enough connections to keep both cores busy while requests wait on I/O.
    pub fn default_for(url: &DatabaseUrl) -> Self {
        match url {
            DatabaseUrl::Sqlite { .. } => Self { max_connections: 4 },
            DatabaseUrl::Postgres { .. } => Self {
                max_connections: 16,
            },
        }
    }
}

#[derive(Clone)]
pub(crate) enum Pools {
    Sqlite(Pool<SqliteConn>),
    Postgres(Pool<AsyncPgConnection>),
}

/// A connection pool on SQLite or PostgreSQL implementing every storage trait of the domain.
#[derive(Clone)]
pub struct Database {
    pub(crate) pools: Pools,
    url: DatabaseUrl,
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
                let mut config = ManagerConfig::<SqliteConn>::default();
                config.custom_setup = Box::new(|url| establish_sqlite(url.to_string()).boxed());
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
                Pools::Sqlite(pool)
            }
            DatabaseUrl::Postgres { url } => {
                let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new(url.as_str());
                let pool = Pool::builder(manager)
                    .max_size(options.max_connections)
                    .build()
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                drop(checkout(&pool).await?);
                Pools::Postgres(pool)
            }
        };
        Ok(Self {
            pools,
            url: url.clone(),
        })
    }

    /// Runs raw SQL statements on a pooled connection: for operators' tooling and for tests
    /// that write rows as an older release would. Nothing in the service calls it.
    pub async fn batch_execute(&self, sql: &str) -> Result<(), StoreError> {
        match &self.pools {
            Pools::Sqlite(pool) => checkout(pool).await?.batch_execute(sql).await,
            Pools::Postgres(pool) => checkout(pool).await?.batch_execute(sql).await,
        }
        .map_err(|e| StoreError::Backend(e.to_string()))
    }

    /// The URL this database was opened with.
    pub fn url(&self) -> &DatabaseUrl {
        &self.url
    }

    /// The engine in use.
    pub fn backend(&self) -> Backend {
        match self.pools {
            Pools::Sqlite(_) => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
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

/// Opens a SQLite connection with the per-connection settings every connection needs.
async fn establish_sqlite(path: String) -> diesel::ConnectionResult<SqliteConn> {
    let mut conn = SqliteConn::establish(&path).await?;
    conn.batch_execute(&format!(
        "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA secure_delete = ON;"
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
            Error::DatabaseError(Kind::ClosedConnection, info) => {
                StoreError::Unavailable(info.message().to_string())
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
            $crate::database::Pools::Sqlite(pool) => {
                let mut object = $crate::database::checkout(pool).await?;
                let $conn: &mut $crate::database::SqliteConn = &mut object;
                $body
            }
            $crate::database::Pools::Postgres(pool) => {
                let mut object = $crate::database::checkout(pool).await?;
                let $conn: &mut diesel_async::AsyncPgConnection = &mut object;
                $body
            }
        }
    };
}
pub(crate) use with_conn;
