//! The schema's history: the embedded migrations of both backends, what a database has
//! applied (diesel's `__diesel_schema_migrations`), and the upgrade contract of
//! docs/operations.md, "Upgrading": one migrator at a time (PostgreSQL's advisory lock,
//! SQLite's write lock), and no process on a schema newer than it knows.

use diesel::{
    migration::{Migration, MigrationSource},
    sqlite::SqliteConnection,
    Connection as _, RunQueryDsl as _,
};
use diesel_async::{async_connection_wrapper::AsyncConnectionWrapper, AsyncPgConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use tessera_domain::store::StoreError;

use super::{sqlite::sqlite_path, sqlite::SQLITE_BUSY_TIMEOUT_MS, Database, Pools};
use crate::url::DatabaseUrl;

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
/// Arbitrary constant naming the advisory lock that serialises concurrent migrators.
const MIGRATION_LOCK_ID: i64 = 0x7e55_e7a0;

/// Why the schema cannot be used or moved.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The database has migrations this binary does not know: a later release wrote it.
    #[error(
        "the database schema is newer than this binary: migration(s) {} were applied by a later \
         release; run that release (or a newer one), or restore a backup taken before the upgrade",
        .unknown.join(", ")
    )]
    Newer {
        /// The versions applied that this binary does not know.
        unknown: Vec<String>,
    },
    /// Migrations are pending and this process was told not to run them.
    #[error(
        "the database schema is older than this binary: {} migration(s) pending ({}); run \
         `api migrate` first",
        .pending.len(),
        .pending.join(", ")
    )]
    Pending {
        /// The pending migrations' versions.
        pending: Vec<String>,
    },
    /// Reading or changing the schema failed.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// A failed statement inside the migration transaction (diesel's transactions need it).
impl From<diesel::result::Error> for SchemaError {
    fn from(e: diesel::result::Error) -> Self {
        harness_error(e)
    }
}

/// Where a migration stands in one database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationState {
    /// Applied.
    Applied,
    /// Known to this binary and not yet applied.
    Pending,
    /// Applied by a release newer than this binary.
    Unknown,
}

/// One migration, as `api migrate --status` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrationEntry {
    /// The version diesel records (`20261121000001`).
    pub version: String,
    /// What it does (`init`); empty for one this binary does not know.
    pub name: String,
    /// Applied, pending, or applied by a newer release.
    pub state: MigrationState,
}

/// What this binary does when it finds pending migrations at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnPending {
    /// Run them (under the lock).
    Migrate,
    /// Refuse to start ([`SchemaError::Pending`]).
    Refuse,
}

impl Database {
    /// Runs pending embedded migrations, refusing a schema newer than this binary. One
    /// migrator at a time: PostgreSQL's advisory lock, SQLite's write lock.
    pub async fn migrate(&self) -> Result<(), SchemaError> {
        self.migrate_through(None).await
    }

    /// Runs pending migrations up to and including the one whose directory name starts with
    /// `last` (all of them with `None`): for tests that build a database as an older release
    /// left it, then migrate it.
    pub async fn migrate_through(&self, last: Option<&str>) -> Result<(), SchemaError> {
        let last = last.map(str::to_string);
        self.with_migration_lock(move |harness| harness.migrate(last.as_deref()))
            .await
    }

    /// At start-up: checks the schema is not newer than this binary, then runs pending
    /// migrations or refuses them as `on_pending` says.
    pub async fn prepare_schema(&self, on_pending: OnPending) -> Result<(), SchemaError> {
        match on_pending {
            OnPending::Migrate => self.migrate().await,
            OnPending::Refuse => {
                let status = self.schema_status().await?;
                refuse_unknown(&status)?;
                let pending: Vec<String> = status
                    .into_iter()
                    .filter(|m| m.state == MigrationState::Pending)
                    .map(|m| m.version)
                    .collect();
                if pending.is_empty() {
                    Ok(())
                } else {
                    Err(SchemaError::Pending { pending })
                }
            }
        }
    }

    /// Every migration this binary knows, applied or pending, in order, then any applied by a
    /// newer release.
    pub async fn schema_status(&self) -> Result<Vec<MigrationEntry>, SchemaError> {
        self.with_migration_lock(|harness| harness.status()).await
    }

    /// Runs `work` on a connection of its own that holds the migration lock, on a blocking
    /// thread (diesel's migration harness is synchronous).
    async fn with_migration_lock<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut dyn Harness) -> Result<T, SchemaError> + Send + 'static,
    ) -> Result<T, SchemaError> {
        let task = match (&self.pools, self.url()) {
            (Pools::Postgres { connector, .. }, _) => {
                let conn = connector
                    .connect()
                    .await
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                tokio::task::spawn_blocking(move || postgres_locked(conn, work))
            }
            (Pools::Sqlite { .. }, DatabaseUrl::Sqlite { path }) => {
                let path = sqlite_path(path)?;
                tokio::task::spawn_blocking(move || sqlite_locked(&path, work))
            }
            (Pools::Sqlite { .. }, DatabaseUrl::Postgres { .. }) => {
                return Err(StoreError::Backend("SQLite pools on a PostgreSQL URL".into()).into())
            }
        };
        task.await
            .map_err(|e| StoreError::Backend(format!("migration task failed: {e}")))?
    }
}

/// `work` under PostgreSQL's advisory lock, released whatever `work` returns.
fn postgres_locked<T>(
    conn: AsyncPgConnection,
    work: impl FnOnce(&mut dyn Harness) -> Result<T, SchemaError>,
) -> Result<T, SchemaError> {
    let mut conn: AsyncConnectionWrapper<AsyncPgConnection> = conn.into();
    diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK_ID})"))
        .execute(&mut conn)
        .map_err(harness_error)?;
    let outcome = work(&mut Embedded {
        conn: &mut conn,
        source: || POSTGRES_MIGRATIONS,
    });
    diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_ID})"))
        .execute(&mut conn)
        .map_err(harness_error)?;
    outcome
}

/// `work` inside one `BEGIN IMMEDIATE` transaction: SQLite's write lock, so a second migrator
/// waits (busy timeout) and then finds nothing pending. Each migration runs in a savepoint.
fn sqlite_locked<T>(
    path: &str,
    work: impl FnOnce(&mut dyn Harness) -> Result<T, SchemaError>,
) -> Result<T, SchemaError> {
    let mut conn =
        SqliteConnection::establish(path).map_err(|e| StoreError::Unavailable(e.to_string()))?;
    // secure_delete: a migration that moves or drops data (clear proxy keys) leaves zeros,
    // not the old bytes, in the freed pages.
    diesel::sql_query(format!("PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"))
        .execute(&mut conn)
        .map_err(harness_error)?;
    diesel::sql_query("PRAGMA secure_delete = ON")
        .execute(&mut conn)
        .map_err(harness_error)?;
    conn.immediate_transaction(|conn| {
        work(&mut Embedded {
            conn,
            source: || SQLITE_MIGRATIONS,
        })
    })
}

/// What the locked work does, whichever the backend.
trait Harness {
    /// Every known migration with its state, then the unknown applied ones.
    fn status(&mut self) -> Result<Vec<MigrationEntry>, SchemaError>;
    /// Refuses a newer schema, then runs the pending migrations through `last`.
    fn migrate(&mut self, last: Option<&str>) -> Result<(), SchemaError>;
}

/// One backend's connection and its embedded migrations (a constant, made on each use).
struct Embedded<'c, C> {
    conn: &'c mut C,
    source: fn() -> EmbeddedMigrations,
}

impl<C, DB> Harness for Embedded<'_, C>
where
    DB: diesel::backend::Backend,
    C: MigrationHarness<DB> + diesel::Connection<Backend = DB>,
    EmbeddedMigrations: MigrationSource<DB>,
{
    fn status(&mut self) -> Result<Vec<MigrationEntry>, SchemaError> {
        let known = MigrationSource::<DB>::migrations(&(self.source)()).map_err(harness_error)?;
        let applied: Vec<String> = self
            .conn
            .applied_migrations()
            .map_err(harness_error)?
            .iter()
            .map(ToString::to_string)
            .collect();
        let mut entries: Vec<MigrationEntry> = known
            .iter()
            .map(|m| {
                let version = m.name().version().to_string();
                let state = if applied.contains(&version) {
                    MigrationState::Applied
                } else {
                    MigrationState::Pending
                };
                MigrationEntry {
                    name: short_name(&m.name().to_string()),
                    version,
                    state,
                }
            })
            .collect();
        let mut unknown: Vec<&String> = applied
            .iter()
            .filter(|v| !entries.iter().any(|e| &e.version == *v))
            .collect();
        unknown.sort();
        entries.extend(unknown.into_iter().map(|version| MigrationEntry {
            version: version.clone(),
            name: String::new(),
            state: MigrationState::Unknown,
        }));
        Ok(entries)
    }

    fn migrate(&mut self, last: Option<&str>) -> Result<(), SchemaError> {
        refuse_unknown(&self.status()?)?;
        let pending = self
            .conn
            .pending_migrations((self.source)())
            .map_err(harness_error)?;
        for migration in pending {
            let name = migration.name().to_string();
            self.conn
                .run_migration(&*migration)
                .map_err(|e| StoreError::Backend(format!("migration {name} failed: {e}")))?;
            if last.is_some_and(|last| name.starts_with(last)) {
                break;
            }
        }
        Ok(())
    }
}

/// [`SchemaError::Newer`] when `status` lists migrations this binary does not know.
fn refuse_unknown(status: &[MigrationEntry]) -> Result<(), SchemaError> {
    let unknown: Vec<String> = status
        .iter()
        .filter(|m| m.state == MigrationState::Unknown)
        .map(|m| m.version.clone())
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(SchemaError::Newer { unknown })
    }
}

/// `2026-11-21-000001_init` → `init`.
fn short_name(directory: &str) -> String {
    directory
        .split_once('_')
        .map_or(directory, |(_, name)| name)
        .to_string()
}

fn harness_error(e: impl std::fmt::Display) -> SchemaError {
    StoreError::Backend(format!("migration failed: {e}")).into()
}
