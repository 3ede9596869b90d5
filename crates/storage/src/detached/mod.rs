//! [`DetachedStore`]: runs each store operation as its own task on the runtime that opened
//! the database.
//!
//! Why: a caller may abandon an operation half-way — a client disconnects, or actix drops the
//! authentication extractor's future because a sibling extractor failed. diesel-async's SQLite
//! wrapper reacts to being dropped mid-query by blocking in `Drop` (`block_in_place`), which
//! panics on the single-threaded runtimes actix workers use. As a spawned task the operation
//! always runs to completion (the caller's drop merely detaches it), and PostgreSQL connections
//! stay on the multi-threaded runtime that created them.
//!
//! Point reads are the exception: they run on the caller's task, on the read path of
//! [`Database`]'s pools (SQLite connections run in-process, PostgreSQL connections whose I/O
//! stays on the calling thread), where being dropped half-way is harmless: a SQLite read runs
//! to its end inside one poll, and dropping a PostgreSQL read only discards its answer. They
//! are what a cold proxy request does three times, and the hop to another runtime and back was
//! most of its time. Token reads by id go through this thread's read batch on PostgreSQL
//! (`read_batch`): concurrent requests' reads share one statement.

use std::{future::Future, sync::Arc};

use tessera_domain::store::StoreError;
use tokio::runtime::Handle;

use crate::{
    database::Database,
    read_batch::{ReadBatchCounts, ReadBatcher},
};

/// Writes `impl $trait for DetachedStore` from one line per method (its name, parameters and
/// `Ok` type) and how it runs:
/// - `caller`: on the caller's task ([`Database`]'s point reads, see the module docs);
/// - `spawned`: as a detached task that always runs to its end ([`DetachedStore::run`]);
/// - `scan`: as a detached task aborted with its caller ([`DetachedStore::run_scan`]);
/// - `batched`: through this thread's token read batch (`get_tokens` only).
///
/// A spawned operation owns its arguments: each is copied with `ToOwned` before the task
/// starts and lent back to the database call by [`attach`].
macro_rules! detached {
    ($trait:ident { $( $(#[$meta:meta])* $how:ident fn $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ; )* }) => {
        #[async_trait::async_trait]
        impl $trait for super::DetachedStore {
            $(
                $(#[$meta])*
                async fn $name(&self, $($arg: $ty),*) -> Result<$ret, StoreError> {
                    detached!(@$how self, $name, $($arg),*)
                }
            )*
        }
    };
    (@caller $store:ident, $name:ident, $($arg:ident),*) => {
        $store.db.$name($($arg),*).await
    };
    (@batched $store:ident, get_tokens, $tenant:ident, $ids:ident) => {
        $store.reads.get_tokens(&$store.db, $tenant, $ids).await
    };
    (@spawned $store:ident, $name:ident, $($arg:ident),*) => {{
        $(let $arg = $arg.to_owned();)*
        $store
            .run(move |db| async move { db.$name($(super::attach(&$arg)),*).await })
            .await
    }};
    (@scan $store:ident, $name:ident, $($arg:ident),*) => {{
        $(let $arg = $arg.to_owned();)*
        $store
            .run_scan(move |db| async move { db.$name($(super::attach(&$arg)),*).await })
            .await
    }};
}

mod applications;
mod associations;
mod audit;
mod console_sessions;
mod data_keys;
mod health;
mod idempotency;
mod proxies;
mod tenants;
mod tokens;
mod webhooks;

/// Lends an argument a spawned operation owns back in the form its database call takes: `&T`
/// as itself borrowed, `&[T]` from a `Vec<T>`, `&str` from a `String`, and a value by copy.
/// The parameter's type picks the form.
trait Attach<'a, Out> {
    fn attach(&'a self) -> Out;
}

impl<'a, T> Attach<'a, &'a T> for T {
    fn attach(&'a self) -> &'a T {
        self
    }
}

impl<'a, T: Clone> Attach<'a, T> for T {
    fn attach(&'a self) -> T {
        self.clone()
    }
}

impl<'a, T> Attach<'a, &'a [T]> for Vec<T> {
    fn attach(&'a self) -> &'a [T] {
        self
    }
}

impl<'a> Attach<'a, &'a str> for String {
    fn attach(&'a self) -> &'a str {
        self
    }
}

/// [`Attach::attach`], as a function the macro can call without naming the form.
fn attach<'a, T: Attach<'a, Out>, Out>(owned: &'a T) -> Out {
    owned.attach()
}

/// A [`Database`] whose operations run as detached tasks; see the module docs.
#[derive(Clone, Debug)]
pub struct DetachedStore {
    db: Database,
    runtime: Handle,
    /// Token reads of concurrent requests, one statement per batch per thread.
    reads: Arc<ReadBatcher>,
}

impl DetachedStore {
    /// Wraps `db`, spawning onto the current runtime (call it from the multi-threaded runtime
    /// that should own the database work).
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(db: Database) -> Self {
        Self {
            db,
            runtime: Handle::current(),
            reads: Arc::default(),
        }
    }

    /// The wrapped database.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// How many token reads this store batched into how many statements (for diagnostics
    /// and tests).
    pub fn token_read_batches(&self) -> ReadBatchCounts {
        self.reads.counts()
    }

    async fn run<T, Fut>(&self, op: impl FnOnce(Database) -> Fut) -> Result<T, StoreError>
    where
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        self.runtime
            .spawn(op(self.db.clone()))
            .await
            .map_err(|e| StoreError::Backend(format!("store task failed: {e}")))?
    }

    /// As [`DetachedStore::run`], for a read-only scan whose cost the caller chose (lists,
    /// searches, the audit listing): when the caller drops it — the client went away — the
    /// task is aborted too, so the statement stops on PostgreSQL (see `scan::ScanGuard`)
    /// instead of holding a connection for nobody. Aborting is safe here:
    /// the task runs on the multi-threaded runtime, and a read leaves nothing half-done.
    async fn run_scan<T, Fut>(&self, op: impl FnOnce(Database) -> Fut) -> Result<T, StoreError>
    where
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        struct AbortOnDrop(tokio::task::AbortHandle);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                self.0.abort();
            }
        }
        let task = self.runtime.spawn(op(self.db.clone()));
        let _abort = AbortOnDrop(task.abort_handle());
        task.await
            .map_err(|e| StoreError::Backend(format!("store task failed: {e}")))?
    }
}
