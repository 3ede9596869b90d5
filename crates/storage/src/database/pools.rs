//! The pools behind [`Database`](super::Database), the turn to write on SQLite, and a
//! connection taken from a pool within a time limit.

use std::{sync::Arc, time::Duration};

use diesel::{sqlite::SqliteConnection, ConnectionError};
use diesel_async::{
    pooled_connection::{
        deadpool::Pool, AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
    },
    AsyncPgConnection, SimpleAsyncConnection,
};
use futures_util::FutureExt;
use tessera_domain::store::StoreError;
use thread_local::ThreadLocal;

use super::{postgres_connect::PgConnector, PoolOptions, SqliteConn, SqliteReadConn};

/// How long a caller waits for a pooled connection before the store reports itself unavailable.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections each serving thread keeps to PostgreSQL for point reads (see [`Pools`]).
const POSTGRES_READS_PER_THREAD: usize = 4;

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
        creates: Arc<crate::create_queue::CreateQueue>,
    },
    Postgres {
        /// Writes and scans.
        pool: Pool<AsyncPgConnection>,
        /// Point reads: one small pool per calling thread.
        reads: Arc<PerThreadPools>,
        /// Makes the connections, with the URL's TLS.
        connector: Arc<PgConnector>,
    },
}

/// PostgreSQL pools, one per thread that reads, created on first use.
pub(crate) struct PerThreadPools {
    connector: Arc<PgConnector>,
    query_timeout: Option<Duration>,
    pools: ThreadLocal<Pool<AsyncPgConnection>>,
}

impl PerThreadPools {
    /// This thread's pool.
    pub(crate) fn local(&self) -> Result<&Pool<AsyncPgConnection>, StoreError> {
        self.pools.get_or_try(|| {
            Pool::builder(postgres_manager(&self.connector, self.query_timeout))
                .max_size(POSTGRES_READS_PER_THREAD)
                .build()
                .map_err(|e| StoreError::Unavailable(e.to_string()))
        })
    }
}

/// A PostgreSQL connection manager. Connections are not pinged at checkout (a `SELECT 1` round
/// trip before every query): a connection whose socket closed is known to be broken and is
/// replaced, and a query on one that broke in between fails like any other database error.
/// Each new connection is made by `connector` (with the URL's TLS) and gets the statement time
/// limit.
fn postgres_manager(
    connector: &Arc<PgConnector>,
    query_timeout: Option<Duration>,
) -> AsyncDieselConnectionManager<AsyncPgConnection> {
    let mut config = ManagerConfig::<AsyncPgConnection>::default();
    config.recycling_method = RecyclingMethod::Fast;
    let setup = crate::query_timeout::postgres_setup(query_timeout);
    let connector = Arc::clone(connector);
    config.custom_setup = Box::new(move |_url| {
        let setup = setup.clone();
        let connector = Arc::clone(&connector);
        async move {
            let mut conn = connector.connect().await?;
            conn.batch_execute(&setup)
                .await
                .map_err(ConnectionError::CouldntSetupConfiguration)?;
            Ok(conn)
        }
        .boxed()
    });
    // The URL is unused: `custom_setup` connects through `connector`.
    AsyncDieselConnectionManager::new_with_config("", config)
}

/// The pools of the PostgreSQL database at `url`, after one connection was made.
pub(super) async fn open_postgres(url: &str, options: PoolOptions) -> Result<Pools, StoreError> {
    let connector =
        Arc::new(PgConnector::new(url).map_err(|e| StoreError::Unavailable(e.to_string()))?);
    let pool = Pool::builder(postgres_manager(&connector, options.query_timeout))
        .max_size(options.max_connections)
        .build()
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    drop(checkout(&pool).await?);
    Ok(Pools::Postgres {
        pool,
        reads: Arc::new(PerThreadPools {
            connector: Arc::clone(&connector),
            query_timeout: options.query_timeout,
            pools: ThreadLocal::new(),
        }),
        connector,
    })
}

/// A connection outside the pools ([`Database::dedicated`]).
pub(crate) enum Dedicated {
    Sqlite(Box<SqliteConnection>),
    Postgres(Box<AsyncPgConnection>),
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

/// One pool's connections, read for the pool gauges of `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// `main` (writes and scans) or `reads` (point reads; on PostgreSQL the per-thread pools
    /// summed).
    pub pool: &'static str,
    /// The most connections it may open.
    pub max: usize,
    /// Connections open.
    pub open: usize,
    /// Open connections no caller holds.
    pub idle: usize,
    /// Callers waiting for a connection now.
    pub waiting: usize,
}

impl PoolStatus {
    fn of<M: deadpool::managed::Manager>(
        pool: &'static str,
        of: &deadpool::managed::Pool<M>,
    ) -> Self {
        let status = of.status();
        Self {
            pool,
            max: status.max_size,
            open: status.size,
            idle: status.available,
            waiting: status.waiting,
        }
    }

    fn add(mut self, other: Self) -> Self {
        self.max += other.max;
        self.open += other.open;
        self.idle += other.idle;
        self.waiting += other.waiting;
        self
    }
}

impl Pools {
    /// The status of each pool.
    pub(crate) fn status(&self) -> Vec<PoolStatus> {
        match self {
            Pools::Sqlite { pool, reads, .. } => {
                vec![PoolStatus::of("main", pool), PoolStatus::of("reads", reads)]
            }
            Pools::Postgres { pool, reads, .. } => {
                let empty = PoolStatus {
                    pool: "reads",
                    max: 0,
                    open: 0,
                    idle: 0,
                    waiting: 0,
                };
                let reads = reads
                    .pools
                    .iter()
                    .map(|p| PoolStatus::of("reads", p))
                    .fold(empty, PoolStatus::add);
                vec![PoolStatus::of("main", pool), reads]
            }
        }
    }
}
