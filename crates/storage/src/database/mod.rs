//! Connection pools for the two backends, migrations, and the glue that lets one query body
//! serve both: `sqlite.rs` and `pools.rs` hold each backend's connections, `migrations.rs` the
//! schema's history, `queries.rs` what every query shares.

use std::time::Duration;

use diesel::{sqlite::SqliteConnection, Connection as _};
use diesel_async::SimpleAsyncConnection;
use tessera_domain::store::StoreError;

use crate::url::DatabaseUrl;

mod migrations;
pub use migrations::{MigrationEntry, MigrationState, OnPending, SchemaError};
mod pools;
mod postgres_connect;
mod queries;
mod sqlite;
pub mod tls;

pub use pools::PoolStatus;
pub(crate) use pools::{checkout, Dedicated, PerThreadPools, Pools, WriteTurn};
pub(crate) use postgres_connect::PgUrl;
pub use postgres_connect::{postgres_connection, PgUrlError};
pub(crate) use queries::{
    later, now, only_row, page_of, read_unique_row, window, with_conn, with_read_conn,
    with_write_conn, DbResultExt,
};
use sqlite::{sqlite_path, sqlite_settings};
pub(crate) use sqlite::{SqliteConn, SqliteReadConn};

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
            DatabaseUrl::Sqlite { path } => sqlite::open_pools(path, options).await?,
            DatabaseUrl::Postgres { url } => pools::open_postgres(url.as_str(), options).await?,
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
            DatabaseUrl::Postgres { .. } => {
                let Pools::Postgres { connector, .. } = &self.pools else {
                    return Err(StoreError::Backend(
                        "a PostgreSQL URL on SQLite pools".into(),
                    ));
                };
                let mut conn = connector.connect().await.map_err(|e| unavailable(&e))?;
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

    /// Each pool's connections now (for `/metrics`).
    pub fn pool_status(&self) -> Vec<PoolStatus> {
        self.pools.status()
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
}
