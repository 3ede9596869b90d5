//! [`HealthStore`] for both backends.

use async_trait::async_trait;
use diesel_async::RunQueryDsl;
use tessera_domain::store::{HealthStore, StoreError};

use crate::database::{with_conn, Database, DbResultExt};

#[async_trait]
impl HealthStore for Database {
    async fn ping(&self) -> Result<(), StoreError> {
        with_conn!(self, |conn| {
            diesel::sql_query("SELECT 1")
                .execute(conn)
                .await
                .db()
                .map(|_| ())
        })
    }
}
