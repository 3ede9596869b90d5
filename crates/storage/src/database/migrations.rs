//! The embedded migrations of both backends, run in order; on PostgreSQL under an advisory
//! lock, so that processes starting together do not race.

use diesel::{sqlite::SqliteConnection, Connection as _, RunQueryDsl as _};
use diesel_async::{async_connection_wrapper::AsyncConnectionWrapper, AsyncPgConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use tessera_domain::store::StoreError;

use super::{sqlite::sqlite_path, sqlite::SQLITE_BUSY_TIMEOUT_MS, Database};
use crate::url::DatabaseUrl;

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
/// Arbitrary constant naming the advisory lock that serialises concurrent migrators.
const MIGRATION_LOCK_ID: i64 = 0x7e55_e7a0;

impl Database {
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

fn migration_error(e: diesel::result::Error) -> StoreError {
    StoreError::Backend(format!("migration failed: {e}"))
}
