//! Writing new tokens: their rows, their metadata rows and, for a child, the link to its
//! parent, in one transaction, with one multi-row INSERT per table. A bulk create of 100 cards
//! costs two statements, not one per token and pair (docs/architecture.md, "Writing tokens").
//!
//! On PostgreSQL each create is its own transaction on a pooled connection. On SQLite, which
//! writes one transaction at a time, creates queue ([`CreateQueue`]); whoever gets the
//! process's write turn writes every create queued by then in one `IMMEDIATE` transaction, each
//! in a savepoint of its own (one create's conflict fails that create alone), so concurrent
//! creates share a commit and the pages they touch. The statements run on the connection's own
//! thread: diesel writes a multi-row INSERT as one statement only through SQLite's synchronous
//! connection.

use diesel::SqliteConnection;
use diesel_async::AsyncConnection;
use tessera_domain::store::{NewAssociation, StoreError, StoredToken, TokenInserts};
use tokio::sync::oneshot;

use crate::{
    create_queue::{NewRows, Waiting},
    database::{checkout, later, now, Database, DbResultExt, Pools, SqliteConn},
    schema::{token_associations, token_metadata, token_search_index, tokens},
};

/// Most rows one INSERT carries: 13 columns × 500 stays far below either backend's bound on a
/// statement's parameters (SQLite 32,766; PostgreSQL 65,535).
const ROWS_PER_INSERT: usize = 500;

/// The statements of [`NewRows`] on `$conn`, for either backend: `$run!(conn, statement)`
/// executes one, `?`-propagating a database error (which rolls the transaction back).
///
/// One token's rows go in one statement per row: a single-row INSERT's text never changes, so it
/// is prepared once per connection, where a multi-row one (whose text has a `VALUES` group per
/// row) is parsed and planned on every call, which costs more than the round trips it saves
/// for a few rows.
macro_rules! insert_rows {
    ($conn:ident, $rows:expr, $run:ident) => {{
        if $rows.tokens.len() == 1 {
            for row in &$rows.tokens {
                $run!($conn, diesel::insert_into(tokens::table).values(row));
            }
            for row in &$rows.metadata {
                $run!(
                    $conn,
                    diesel::insert_into(token_metadata::table).values(row)
                );
            }
            for row in &$rows.search {
                $run!(
                    $conn,
                    diesel::insert_into(token_search_index::table).values(row)
                );
            }
        } else {
            for chunk in $rows.tokens.chunks(ROWS_PER_INSERT) {
                $run!($conn, diesel::insert_into(tokens::table).values(chunk));
            }
            for chunk in $rows.metadata.chunks(ROWS_PER_INSERT) {
                $run!(
                    $conn,
                    diesel::insert_into(token_metadata::table).values(chunk)
                );
            }
            for chunk in $rows.search.chunks(ROWS_PER_INSERT) {
                $run!(
                    $conn,
                    diesel::insert_into(token_search_index::table).values(chunk)
                );
            }
        }
        if let Some(link) = &$rows.link {
            $run!(
                $conn,
                diesel::insert_into(token_associations::table).values(link)
            );
        }
        Ok(())
    }};
}

#[async_trait::async_trait]
impl TokenInserts for Database {
    async fn insert_token(&self, token: &StoredToken) -> Result<(), StoreError> {
        self.insert_token_rows(token, None).await
    }

    /// Several tokens with their metadata in one transaction, all or none.
    async fn insert_tokens(&self, tokens: &[StoredToken]) -> Result<(), StoreError> {
        self.insert_new_rows(NewRows::of(tokens, None)).await
    }
}

impl Database {
    /// Writes a token, its metadata pairs and (for a child) its link to the parent in one
    /// transaction, so a failure leaves nothing behind.
    pub(crate) async fn insert_token_rows(
        &self,
        token: &StoredToken,
        link: Option<&NewAssociation>,
    ) -> Result<(), StoreError> {
        self.insert_new_rows(NewRows::of(std::slice::from_ref(token), link))
            .await
    }

    async fn insert_new_rows(&self, rows: NewRows) -> Result<(), StoreError> {
        match &self.pools {
            Pools::Sqlite {
                pool,
                writes,
                creates,
                ..
            } => {
                let (done, outcome) = oneshot::channel();
                creates.push(Waiting { rows, done });
                {
                    let _turn = writes.take().await;
                    // No await between taking the queue and handing it to the blocking
                    // thread: a caller that goes away cannot drop the others' creates.
                    let conn = checkout(pool).await;
                    let group = creates.take_all();
                    if !group.is_empty() {
                        match conn {
                            Ok(conn) => write_group(conn, group).await,
                            Err(e) => answer_all(group, &e),
                        }
                    }
                }
                outcome.await.unwrap_or_else(|_| {
                    Err(StoreError::Unavailable(
                        "the write of this create was abandoned".into(),
                    ))
                })
            }
            Pools::Postgres { pool, .. } => {
                let mut conn = checkout(pool).await?;
                conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                    insert_rows!(conn, rows, later)
                })
                .await
                .db()
            }
        }
    }
}

/// Writes a group of SQLite creates in one transaction, each in a savepoint, and tells each
/// its outcome. Runs to the end on the connection's thread even if the caller goes away.
async fn write_group(mut conn: impl std::ops::DerefMut<Target = SqliteConn>, group: Vec<Waiting>) {
    let written = conn
        .spawn_blocking(move |conn: &mut SqliteConnection| {
            // A create whose caller went away while it was queued is not written: nobody would
            // learn its id, and its audit event is recorded only with an answer.
            let mut group = group;
            group.retain(|waiting| !waiting.done.is_closed());
            let outcomes = conn.immediate_transaction(|conn| {
                let mut outcomes = Vec::with_capacity(group.len());
                for waiting in &group {
                    outcomes.push(
                        diesel::Connection::transaction(conn, |conn| {
                            insert_rows!(conn, waiting.rows, now)
                        })
                        .db(),
                    );
                }
                Ok::<_, diesel::result::Error>(outcomes)
            });
            match outcomes {
                Ok(outcomes) => {
                    for (waiting, outcome) in group.into_iter().zip(outcomes) {
                        let _ = waiting.done.send(outcome);
                    }
                }
                Err(e) => {
                    if let Err(error) = Err::<(), _>(e).db() {
                        answer_all(group, &error);
                    }
                }
            }
            Ok(())
        })
        .await;
    if let Err(e) = written {
        // The blocking task could not run at all: its closure, and the group's senders with
        // it, were dropped, so every waiter hears that its write was abandoned.
        tracing::error!(error = %e, "a group of token creates could not be written");
    }
}

/// Tells every create of `group` that it failed with `error`.
fn answer_all(group: Vec<Waiting>, error: &StoreError) {
    for waiting in group {
        let _ = waiting.done.send(Err(error.clone()));
    }
}
