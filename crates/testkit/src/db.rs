//! Throw-away databases for tests, on either backend.
//!
//! SQLite tests get a fresh file in the temp directory; PostgreSQL tests, when
//! `TESSERA_TEST_DATABASE_URL` is set, get a fresh schema on that server (selected through the
//! connection's `search_path`), so tests run in parallel without seeing each other. Both are
//! removed when the [`TestDatabase`] is dropped.

use std::path::PathBuf;

use diesel_async::SimpleAsyncConnection;

use tessera_storage::{Database, DatabaseUrl, PoolOptions};

/// Environment variable naming the PostgreSQL server for tests.
pub const PG_URL_VAR: &str = "TESSERA_TEST_DATABASE_URL";

#[derive(Debug)]
enum Cleanup {
    File(PathBuf),
    Schema { admin_url: String, schema: String },
}

/// A migrated, empty database that removes itself when dropped.
#[derive(Debug)]
pub struct TestDatabase {
    /// The pool.
    pub db: Database,
    /// Its URL (for starting a server process on the same data).
    pub url: DatabaseUrl,
    cleanup: Cleanup,
}

impl TestDatabase {
    /// A fresh SQLite file.
    ///
    /// # Panics
    /// When the file cannot be created or migrated (a broken test environment).
    pub async fn sqlite() -> Self {
        Self::sqlite_through(None).await
    }

    /// A fresh SQLite file migrated up to and including migration `last…` (all with `None`).
    ///
    /// # Panics
    /// As [`TestDatabase::sqlite`].
    pub async fn sqlite_through(last: Option<&str>) -> Self {
        let path =
            std::env::temp_dir().join(format!("tessera-test-{}.db", uuid::Uuid::new_v4().simple()));
        let url = DatabaseUrl::Sqlite { path: path.clone() };
        let db = Self::open(&url, last).await;
        Self {
            db,
            url,
            cleanup: Cleanup::File(path),
        }
    }

    /// A fresh PostgreSQL schema, or `None` when `TESSERA_TEST_DATABASE_URL` is unset.
    ///
    /// # Panics
    /// When the variable is set but the server cannot be used.
    pub async fn postgres() -> Option<Self> {
        Self::postgres_through(None).await
    }

    /// A fresh PostgreSQL schema migrated up to and including migration `last…`.
    ///
    /// # Panics
    /// As [`TestDatabase::postgres`].
    pub async fn postgres_through(last: Option<&str>) -> Option<Self> {
        let admin_url = std::env::var(PG_URL_VAR).ok().filter(|u| !u.is_empty())?;
        let schema = format!("tessera_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = tessera_storage::postgres_connection(&admin_url)
            .await
            .unwrap_or_else(|e| panic!("{PG_URL_VAR} is set but unusable: {e}"));
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .await
            .unwrap_or_else(|e| panic!("creating schema {schema}: {e}"));
        let separator = if admin_url.contains('?') { '&' } else { '?' };
        let url = DatabaseUrl::Postgres {
            url: format!("{admin_url}{separator}options=-csearch_path%3D{schema}"),
        };
        let db = Self::open(&url, last).await;
        Some(Self {
            db,
            url,
            cleanup: Cleanup::Schema { admin_url, schema },
        })
    }

    /// The SQLite file path, for tests that inspect the raw bytes on disk.
    pub fn sqlite_path(&self) -> Option<&PathBuf> {
        match &self.cleanup {
            Cleanup::File(p) => Some(p),
            Cleanup::Schema { .. } => None,
        }
    }

    async fn open(url: &DatabaseUrl, last: Option<&str>) -> Database {
        let db = Database::connect(
            url,
            PoolOptions {
                max_connections: 4,
                ..PoolOptions::default_for(url)
            },
        )
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        db.migrate_through(last)
            .await
            .unwrap_or_else(|e| panic!("migrating {url}: {e}"));
        db
    }

    /// Every event of one audit chain (`None`: the deployment's), in chain order, read from
    /// its blocks.
    ///
    /// # Panics
    /// When the blocks cannot be read or decoded.
    pub async fn audit_chain(
        &self,
        chain: Option<tessera_domain::TenantId>,
    ) -> Vec<tessera_domain::audit::ChainedEvent> {
        use tessera_audit::AuditStore;
        self.db
            .audit_blocks(chain, i64::MIN, u32::MAX)
            .await
            .expect("audit blocks")
            .iter()
            .flat_map(|b| b.events().expect("decode block"))
            .collect()
    }

    /// Replaces `from` with `to` in the stored text of `chain`'s audit blocks (`None`: the
    /// deployment's), as someone with write access to the database would.
    pub async fn edit_audit_text(
        &self,
        chain: Option<tessera_domain::TenantId>,
        from: &str,
        to: &str,
    ) {
        let key = chain.map_or_else(|| uuid::Uuid::nil().to_string(), |t| t.to_string());
        crate::tamper::replace_in_audit_lines(&self.url, Some(&key), from, to).await;
    }

    /// Runs raw SQL on this database (to write rows as an older release would).
    ///
    /// # Panics
    /// When the statement fails.
    pub async fn execute(&self, sql: &str) {
        self.db
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("running `{sql}`: {e}"));
    }

    /// `SELECT COUNT(*) FROM {from}` (`from` may carry a `WHERE`), for rows no API shows.
    ///
    /// # Panics
    /// When the query fails.
    pub async fn count(&self, from: &str) -> i64 {
        #[derive(diesel::QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let sql = format!("SELECT COUNT(*) AS n FROM {from}");
        let rows: Vec<Count> = match &self.url {
            DatabaseUrl::Sqlite { path } => {
                use diesel::{Connection, RunQueryDsl};
                let mut conn = diesel::SqliteConnection::establish(&path.to_string_lossy())
                    .expect("open the SQLite file");
                diesel::sql_query(&sql).load(&mut conn)
            }
            DatabaseUrl::Postgres { url } => {
                use diesel_async::RunQueryDsl;
                let mut conn = tessera_storage::postgres_connection(url)
                    .await
                    .expect("connect");
                diesel::sql_query(&sql).load(&mut conn).await
            }
        }
        .unwrap_or_else(|e| panic!("running `{sql}`: {e}"));
        rows.first().map_or(0, |c| c.n)
    }

    /// The bytes the database keeps on disk for its tables, to search for plaintext: on SQLite
    /// the file and its WAL; on PostgreSQL (after a `CHECKPOINT`) the files of the schema's
    /// tables, indexes and TOAST tables, which also hold rows deleted but not yet vacuumed.
    ///
    /// # Panics
    /// When the files cannot be read (PostgreSQL's data directory must be readable: tests run
    /// on the database's machine, as root or as its owner).
    pub async fn stored_bytes(&self) -> Vec<u8> {
        match &self.cleanup {
            Cleanup::File(path) => {
                let mut all = std::fs::read(path).expect("database file");
                let mut wal = path.clone().into_os_string();
                wal.push("-wal");
                all.extend(std::fs::read(wal).unwrap_or_default());
                all
            }
            Cleanup::Schema { admin_url, schema } => {
                #[derive(diesel::QueryableByName)]
                struct Path {
                    #[diesel(sql_type = diesel::sql_types::Text)]
                    path: String,
                }
                use diesel_async::RunQueryDsl;
                let mut admin = tessera_storage::postgres_connection(admin_url)
                    .await
                    .expect("admin");
                admin.batch_execute("CHECKPOINT").await.expect("checkpoint");
                let dir: Vec<Path> =
                    diesel::sql_query("SELECT current_setting('data_directory') AS path")
                        .load(&mut admin)
                        .await
                        .expect("data directory");
                let files: Vec<Path> = diesel::sql_query(format!(
                    "SELECT pg_relation_filepath(c.oid) AS path FROM pg_class c \
                     WHERE c.relnamespace = '{schema}'::regnamespace AND c.relkind IN ('r', 'i') \
                     UNION ALL SELECT pg_relation_filepath(c.reltoastrelid) AS path FROM pg_class c \
                     WHERE c.relnamespace = '{schema}'::regnamespace AND c.reltoastrelid <> 0"
                ))
                .load(&mut admin)
                .await
                .expect("relation files");
                let root = PathBuf::from(&dir[0].path);
                let mut all = Vec::new();
                for file in files {
                    for segment in 0.. {
                        let mut path = root.join(&file.path).into_os_string();
                        if segment > 0 {
                            path.push(format!(".{segment}"));
                        }
                        match std::fs::read(&path) {
                            Ok(bytes) => all.extend(bytes),
                            Err(_) if segment > 0 => break,
                            Err(e) => panic!("reading {}: {e}", PathBuf::from(path).display()),
                        }
                    }
                }
                all
            }
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
            }
            Cleanup::Schema { admin_url, schema } => {
                // Drop runs inside the test's runtime, which cannot block on itself: do the
                // async cleanup on a separate thread with its own small runtime.
                let (admin_url, schema) = (admin_url.clone(), schema.clone());
                let _ = std::thread::spawn(move || {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    // A test that panicked may leave write transactions open on its own
                    // runtime — the one this drop is blocking — so waiting for their locks
                    // would hang forever: give up after a few seconds and leave the schema.
                    rt.block_on(async move {
                        if let Ok(mut conn) = tessera_storage::postgres_connection(&admin_url).await {
                            let _ = conn
                                .batch_execute(&format!(
                                    "SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS {schema} CASCADE"
                                ))
                                .await;
                        }
                    });
                })
                .join();
            }
        }
    }
}

/// Runs `sql` on the PostgreSQL server of `TESSERA_TEST_DATABASE_URL` as its user (for tests
/// that change server state: roles, connection limits). `None` when the variable is unset.
///
/// # Panics
/// When the variable is set but the server refuses the connection or the statement.
pub async fn postgres_admin(sql: &str) -> Option<()> {
    let admin_url = std::env::var(PG_URL_VAR).ok().filter(|u| !u.is_empty())?;
    let mut admin = tessera_storage::postgres_connection(&admin_url)
        .await
        .unwrap_or_else(|e| panic!("{PG_URL_VAR} is set but unusable: {e}"));
    admin
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("running `{sql}`: {e}"));
    Some(())
}

/// For benchmarks: a multi-threaded runtime of two workers (the measuring machine's cores) to
/// open the databases on with [`bench_each_backend`], so that the store's work runs there and
/// not on the thread that measures, as in the binaries.
///
/// # Panics
/// When the runtime cannot be built (a broken environment).
pub fn storage_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("storage runtime")
}

/// For benchmarks: runs `bench` with a fresh SQLite database, then with a fresh PostgreSQL
/// one when `TESSERA_TEST_DATABASE_URL` is set (saying so when it is not), each opened on `rt`
/// (which then owns the store's work, as in the binaries) and dropped before the next.
/// `TESSERA_BENCH_BACKENDS` (`sqlite`, `postgres` or both, comma-separated) narrows the run.
pub fn bench_each_backend(
    rt: &tokio::runtime::Runtime,
    mut bench: impl FnMut(&'static str, TestDatabase),
) {
    let wanted = |name: &str| {
        std::env::var("TESSERA_BENCH_BACKENDS").map_or(true, |list| list.contains(name))
    };
    if wanted("sqlite") {
        bench("sqlite", rt.block_on(TestDatabase::sqlite()));
    }
    if wanted("postgres") {
        match rt.block_on(TestDatabase::postgres()) {
            Some(db) => bench("postgres", db),
            None => eprintln!("postgres: skipped (set {PG_URL_VAR})"),
        }
    }
}

/// [`bench_each_backend`] for benches of the detached store: a two-thread storage runtime (as
/// in the binaries) builds each backend's fixture with `fixture`, then `bench` measures it.
pub fn bench_each_backend_detached<F>(
    fixture: impl Fn(&tokio::runtime::Runtime, TestDatabase) -> F,
    mut bench: impl FnMut(&'static str, &F),
) {
    let storage = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("storage runtime");
    bench_each_backend(&storage, |name, db| bench(name, &fixture(&storage, db)));
}

/// Whether PostgreSQL tests must run: under `CI=true` a missing `TESSERA_TEST_DATABASE_URL` is
/// an error, not a skip.
pub fn postgres_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Defines one `#[tokio::test]` per backend for each named async test function taking a
/// [`TestDatabase`]: `mod sqlite { fn name }` always, `mod postgres { fn name }` which skips
/// (with a message) when `TESSERA_TEST_DATABASE_URL` is unset, and fails instead under `CI=true`.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = $crate::db::TestDatabase::sqlite().await;
                    super::$name(&db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    match $crate::db::TestDatabase::postgres().await {
                        Some(db) => super::$name(&db).await,
                        None if $crate::db::postgres_required() => {
                            panic!("CI=true but {} is unset: PostgreSQL tests must run", $crate::db::PG_URL_VAR)
                        }
                        None => eprintln!("skipped: set {} to run PostgreSQL tests", $crate::db::PG_URL_VAR),
                    }
                }
            )*
        }
    };
}

/// Like [`backend_tests!`], once per transform isolation mode too: for each named async test
/// function taking a [`TestDatabase`] and an [`crate::gateway::Isolation`], defines
/// `mod inline { mod sqlite { fn name } mod postgres { fn name } }` and the same under
/// `mod process`.
#[macro_export]
macro_rules! isolation_backend_tests {
    ($($name:ident),* $(,)?) => {
        mod inline {
            $crate::__backends_in_mode!($crate::gateway::Isolation::Inline; $($name),*);
        }
        mod process {
            $crate::__backends_in_mode!($crate::gateway::Isolation::Process; $($name),*);
        }
    };
}

/// Implementation of [`isolation_backend_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __backends_in_mode {
    ($mode:expr; $($name:ident),*) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = $crate::db::TestDatabase::sqlite().await;
                    super::super::$name(&db, $mode).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    match $crate::db::TestDatabase::postgres().await {
                        Some(db) => super::super::$name(&db, $mode).await,
                        None if $crate::db::postgres_required() => {
                            panic!("CI=true but {} is unset: PostgreSQL tests must run", $crate::db::PG_URL_VAR)
                        }
                        None => eprintln!("skipped: set {} to run PostgreSQL tests", $crate::db::PG_URL_VAR),
                    }
                }
            )*
        }
    };
}
