//! Writing new tokens: their rows, their metadata rows and, for a child, the link to its
//! parent, in one transaction, with one multi-row INSERT per table. A bulk create of 100 cards
//! costs two statements, not one per token and pair (docs/architecture.md, "Writing tokens").
//!
//! On PostgreSQL the statements run on a pooled connection. On SQLite they run on the pooled
//! connection's own thread, in an IMMEDIATE transaction begun after this process's write turn:
//! diesel writes a multi-row INSERT as one statement only through SQLite's synchronous
//! connection, and a transaction that holds the lock from its BEGIN never waits half-way.

use diesel_async::AsyncConnection;
use tessera_domain::store::{NewAssociation, StoreError, StoredToken};

use crate::{
    database::{checkout, Database, DbResultExt, Pools},
    rows::{AssociationRow, TokenMetadataRow, TokenRow},
    schema::{token_associations, token_metadata, tokens},
};

/// Most rows one INSERT carries: 13 columns × 500 stays far below either backend's bound on a
/// statement's parameters (SQLite 32,766; PostgreSQL 65,535).
const ROWS_PER_INSERT: usize = 500;

/// The rows one create writes.
struct NewRows {
    tokens: Vec<TokenRow>,
    metadata: Vec<TokenMetadataRow>,
    link: Option<AssociationRow>,
}

impl NewRows {
    fn of(batch: &[StoredToken], link: Option<&NewAssociation>) -> Self {
        Self {
            tokens: batch.iter().map(TokenRow::from).collect(),
            metadata: batch.iter().flat_map(TokenMetadataRow::for_token).collect(),
            link: link.map(AssociationRow::from),
        }
    }
}

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

/// Runs a statement on SQLite's synchronous connection.
macro_rules! now {
    ($conn:ident, $statement:expr) => {
        diesel::RunQueryDsl::execute($statement, $conn)?
    };
}

/// Runs a statement on PostgreSQL's asynchronous connection.
macro_rules! later {
    ($conn:ident, $statement:expr) => {
        diesel_async::RunQueryDsl::execute($statement, $conn).await?
    };
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

    /// Writes several tokens with their metadata in one transaction, all or none.
    pub(super) async fn insert_token_batch(&self, batch: &[StoredToken]) -> Result<(), StoreError> {
        self.insert_new_rows(NewRows::of(batch, None)).await
    }

    async fn insert_new_rows(&self, rows: NewRows) -> Result<(), StoreError> {
        match &self.pools {
            Pools::Sqlite { pool, writes, .. } => {
                let _turn = writes.take().await;
                let mut conn = checkout(pool).await?;
                conn.spawn_blocking(move |conn| {
                    conn.immediate_transaction(|conn| insert_rows!(conn, rows, now))
                })
                .await
                .db()
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
