//! Scans whose cost a caller chooses (lists, searches, the audit listing) and what stops them
//! when nobody waits for them any more.

use diesel_async::{pooled_connection::AsyncDieselConnectionManager, AsyncPgConnection};

/// Like [`with_conn!`], for a scan whose cost a caller chooses (lists, searches, the audit
/// listing): on PostgreSQL the statement is cancelled when the request goes away before it
/// finishes (see [`ScanGuard`]). SQLite's statements stop at the time limit instead.
macro_rules! with_scan_conn {
    ($db:expr, |$conn:ident| $body:expr) => {
        match &$db.pools {
            $crate::database::Pools::Sqlite { pool, .. } => {
                let mut object = $crate::database::checkout(pool).await?;
                let $conn: &mut $crate::database::SqliteConn = &mut object;
                $body
            }
            $crate::database::Pools::Postgres {
                pool, connector, ..
            } => {
                let mut guard = $crate::scan::ScanGuard::new(
                    $crate::database::checkout(pool).await?,
                    connector.tls(),
                );
                let result = {
                    let Some($conn) = guard.conn() else {
                        return Err(tessera_domain::store::StoreError::Backend(
                            "the scan's connection is gone".into(),
                        ));
                    };
                    $body
                };
                guard.finish();
                result
            }
        }
    };
}
pub(crate) use with_scan_conn;

/// A pooled PostgreSQL connection running a scan. Dropped before [`ScanGuard::finish`] — the
/// request's future was dropped because the client went away, or the body returned early —
/// it asks the server to cancel whatever the connection is running (PostgreSQL would otherwise
/// finish the query for nobody, holding the connection) and closes the
/// connection instead of pooling it, so the cancel can never reach another request's
/// statement.
pub(crate) struct ScanGuard {
    conn: Option<deadpool::managed::Object<AsyncDieselConnectionManager<AsyncPgConnection>>>,
    /// The cancel request goes over TLS as the connection did.
    tls: tokio_postgres_rustls::MakeRustlsConnect,
}

impl ScanGuard {
    pub(crate) fn new(
        conn: deadpool::managed::Object<AsyncDieselConnectionManager<AsyncPgConnection>>,
        tls: tokio_postgres_rustls::MakeRustlsConnect,
    ) -> Self {
        Self {
            conn: Some(conn),
            tls,
        }
    }

    /// The connection (always there: only `finish` and `drop` take it, both consuming the
    /// guard).
    pub(crate) fn conn(&mut self) -> Option<&mut AsyncPgConnection> {
        self.conn.as_deref_mut()
    }

    /// The scan ended: the connection goes back to the pool.
    pub(crate) fn finish(mut self) {
        self.conn.take();
    }
}

impl Drop for ScanGuard {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let cancel = conn.cancel_token();
        drop(deadpool::managed::Object::take(conn));
        let tls = self.tls.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = cancel.cancel_query(tls).await {
                    tracing::debug!(error = %e, "cancelling an abandoned query failed");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use diesel_async::SimpleAsyncConnection;

    use crate::{
        database::{Database, PoolOptions, Pools},
        url::DatabaseUrl,
    };

    /// PostgreSQL's URL for tests, when set (required under `CI=true`).
    fn postgres_url() -> Option<String> {
        let url = std::env::var("TESSERA_TEST_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty());
        assert!(
            url.is_some() || std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but TESSERA_TEST_DATABASE_URL is unset"
        );
        url
    }

    /// A scan abandoned mid-statement (the request's future dropped) is cancelled on the
    /// server instead of running on for nobody.
    #[tokio::test]
    async fn an_abandoned_scan_is_cancelled_on_the_server() {
        let Some(url) = postgres_url() else {
            eprintln!("skipped: set TESSERA_TEST_DATABASE_URL to run PostgreSQL tests");
            return;
        };
        let url = DatabaseUrl::Postgres { url };
        let db = Database::connect(&url, PoolOptions::default_for(&url))
            .await
            .expect("connect");
        let marker = format!("tessera_abandoned_{}", uuid::Uuid::new_v4().simple());
        let sql = format!("SELECT pg_sleep(30) AS {marker}");
        let scan = async {
            with_scan_conn!(db, |conn| conn
                .batch_execute(&sql)
                .await
                .map_err(|e| tessera_domain::store::StoreError::Backend(e.to_string())))
        };
        let abandoned = tokio::time::timeout(Duration::from_millis(300), scan).await;
        assert!(abandoned.is_err(), "the sleep outlived the timeout");
        let Pools::Postgres { pool, .. } = &db.pools else {
            unreachable!("a PostgreSQL database");
        };
        let probe = format!(
            "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_stat_activity \
             WHERE query LIKE '%{marker}%' AND pid <> pg_backend_pid() AND state = 'active') \
             THEN RAISE EXCEPTION 'still running'; END IF; END $$"
        );
        let mut gone = false;
        for _ in 0..50 {
            let mut conn = crate::database::checkout(pool).await.expect("conn");
            if conn.batch_execute(&probe).await.is_ok() {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(gone, "the abandoned statement still runs on the server");
    }
}
