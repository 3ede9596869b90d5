//! The expiry sweep: deletes tokens past their expiry, a batch at a time, from any process.

use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::store::StoreError;
use time::OffsetDateTime;

use crate::{
    database::{with_write_conn, Database, DbResultExt},
    rows::to_db_time,
    schema::{token_metadata, token_search_index, tokens},
};

impl Database {
    /// `TokenStore::delete_expired_tokens`: one batch of the expiry sweep.
    pub(super) async fn sweep_expired(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let now = to_db_time(now);
        with_write_conn!(self, |conn| {
            let expired: Vec<(String, String)> = tokens::table
                .filter(tokens::expires_at.le(now))
                .order(tokens::expires_at.asc())
                .limit(i64::from(limit))
                .select((tokens::tenant_id, tokens::id))
                .load(conn)
                .await
                .db()?;
            let mut deleted = 0u64;
            // One statement per token, each only if the token is still expired (another
            // process may have swept it already); then its metadata and search index rows
            // (which reference their tenant, not their token: docs/architecture.md "Writing
            // tokens").
            // Associations go with it by ON DELETE CASCADE, on both backends.
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                for (tenant, id) in &expired {
                    let n = diesel::delete(
                        tokens::table
                            .filter(tokens::tenant_id.eq(tenant))
                            .filter(tokens::id.eq(id))
                            .filter(tokens::expires_at.le(now)),
                    )
                    .execute(conn)
                    .await?;
                    if n > 0 {
                        diesel::delete(
                            token_metadata::table
                                .filter(token_metadata::tenant_id.eq(tenant))
                                .filter(token_metadata::token_id.eq(id)),
                        )
                        .execute(conn)
                        .await?;
                        diesel::delete(
                            token_search_index::table
                                .filter(token_search_index::tenant_id.eq(tenant))
                                .filter(token_search_index::token_id.eq(id)),
                        )
                        .execute(conn)
                        .await?;
                    }
                    deleted += n as u64;
                }
                Ok(())
            })
            .await
            .db()?;
            Ok::<_, StoreError>(deleted)
        })
    }
}
