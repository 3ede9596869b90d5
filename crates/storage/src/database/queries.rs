//! What query code shares on both backends: rows to pages, diesel's errors to the domain's,
//! and the macros that expand one query body for each backend's connection.

use tessera_domain::{store::StoreError, Page, PageRequest};

/// The row of a point read by a unique key, if any.
///
/// Point reads load rather than call diesel's `first`: its `LIMIT ?` is a bound parameter that
/// SQLite's planner treats as relevant to the plan, so every new binding expires the cached
/// statement and each call was parsed and planned again (half of a cold proxy request's CPU).
/// A unique key matches at most one row, so no limit is needed.
pub(crate) fn only_row<T>(rows: Vec<T>) -> Option<T> {
    rows.into_iter().next()
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
            Error::DatabaseError(Kind::ClosedConnection | Kind::UnableToSendCommand, info) => {
                StoreError::Unavailable(info.message().to_string())
            }
            Error::DatabaseError(_, info) if crate::query_timeout::is_timeout(info.message()) => {
                StoreError::Timeout(info.message().to_string())
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
            $crate::database::Pools::Sqlite { pool, .. } => {
                let mut object = $crate::database::checkout(pool).await?;
                let $conn: &mut $crate::database::SqliteConn = &mut object;
                $body
            }
            $crate::database::Pools::Postgres { pool, .. } => {
                let mut object = $crate::database::checkout(pool).await?;
                let $conn: &mut diesel_async::AsyncPgConnection = &mut object;
                $body
            }
        }
    };
}
pub(crate) use with_conn;

/// Finishes a step of code written once for both backends' connections, on SQLite's
/// synchronous one: `now!(conn, statement)` executes a statement, `now!(step)` takes a step's
/// result. Its twin [`later!`] awaits the same on PostgreSQL's asynchronous connection.
macro_rules! now {
    ($conn:ident, $statement:expr) => {
        diesel::RunQueryDsl::execute($statement, $conn)?
    };
    ($step:expr) => {
        $step?
    };
}
pub(crate) use now;

/// [`now!`] on PostgreSQL's asynchronous connection: the statement or step is awaited.
macro_rules! later {
    ($conn:ident, $statement:expr) => {
        diesel_async::RunQueryDsl::execute($statement, $conn).await?
    };
    ($step:expr) => {
        $step.await?
    };
}
pub(crate) use later;

/// Like [`with_conn!`], for a statement or transaction that writes: on SQLite it first takes
/// the process's [`WriteTurn`], held until `$body` is done.
macro_rules! with_write_conn {
    ($db:expr, |$conn:ident| $body:expr) => {{
        let _turn = $db.take_write_turn().await;
        $crate::database::with_conn!($db, |$conn| $body)
    }};
}
pub(crate) use with_write_conn;

/// Like [`with_conn!`], for a point read (by primary key or unique index, a handful of rows):
/// on the calling thread's read path of [`Pools`]. Nothing that writes or scans goes here.
macro_rules! with_read_conn {
    ($db:expr, |$conn:ident| $body:expr) => {
        match &$db.pools {
            $crate::database::Pools::Sqlite { reads, .. } => {
                let mut object = $crate::database::checkout(reads).await?;
                let $conn: &mut $crate::database::SqliteReadConn = &mut object;
                $body
            }
            $crate::database::Pools::Postgres { reads, .. } => {
                let mut object = $crate::database::checkout(reads.local()?).await?;
                let $conn: &mut diesel_async::AsyncPgConnection = &mut object;
                $body
            }
        }
    };
}
pub(crate) use with_read_conn;

/// The one row `$query` finds by a unique key (a primary key, or a credential's lookup hash),
/// loaded as `$row` on the read path ([`with_read_conn!`]); `None` when there is none. The
/// lookup by key of applications and proxies, and every point read by id, are this one read.
/// The caller has `QueryDsl`, `SelectableHelper` and [`DbResultExt`] in scope.
macro_rules! read_unique_row {
    ($db:expr, $query:expr, $row:ty) => {
        $crate::database::with_read_conn!($db, |conn| {
            $query
                .select(<$row>::as_select())
                .load::<$row>(conn)
                .await
                .db()
                .map($crate::database::only_row)
        })
    };
}
pub(crate) use read_unique_row;
