//! # tessera-storage
//!
//! The domain's storage traits over diesel-async, on embedded SQLite (the default) or
//! PostgreSQL (production). Both backends share one schema definition and one set of queries:
//! [`Database`] is an enum over the two pools, and the `with_conn!` macro expands each query body
//! once per backend so both are type-checked from the same source.
//!
//! Migrations for each backend are embedded in the binary and run by [`Database::migrate`]
//! before a server starts.

mod applications;
mod associations;
mod audit;
mod console_sessions;
mod create_queue;
mod data_keys;
mod database;
mod detached;
mod health;
mod idempotency;
mod proxies;
mod purge;
mod query_timeout;
mod read_batch;
mod rows;
mod scan;
mod schema;
mod tenants;
mod tokens;
mod url;
mod webhooks;

pub use database::{
    postgres_connection, tls, Backend, Database, MigrationEntry, MigrationState, OnPending,
    PgUrlError, PoolOptions, PoolStatus, SchemaError, DEFAULT_QUERY_TIMEOUT,
};
pub use detached::DetachedStore;
pub use read_batch::ReadBatchCounts;
pub use url::{DatabaseUrl, DatabaseUrlError};
