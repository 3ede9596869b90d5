//! Upkeep across tenants: the expiry sweep, the CVC sweep's reads and the fingerprint
//! backfill.

use diesel::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    store::{StoreError, StoredToken, TokenUpkeep},
    TenantId, TokenId,
};
use time::OffsetDateTime;

use super::queries::delete_search_rows;
use crate::{
    database::{with_conn, with_write_conn, Database, DbResultExt},
    rows::{to_db_time, TokenRow},
    schema::{token_metadata, token_search_index, tokens},
};

#[async_trait::async_trait]
impl TokenUpkeep for Database {
    /// One batch of the expiry sweep: deletes tokens past their expiry, from any process.
    async fn delete_expired_tokens(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<(TenantId, TokenId)>, StoreError> {
        let now = to_db_time(now);
        let deleted = with_write_conn!(self, |conn| {
            let expired: Vec<(String, String)> = tokens::table
                .filter(tokens::expires_at.le(now))
                .order(tokens::expires_at.asc())
                .limit(i64::from(limit))
                .select((tokens::tenant_id, tokens::id))
                .load(conn)
                .await
                .db()?;
            let mut deleted = Vec::new();
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
                        delete_search_rows!(conn, tenant, id).await?;
                    }
                    if n > 0 {
                        deleted.push((tenant.clone(), id.clone()));
                    }
                }
                Ok(())
            })
            .await
            .db()?;
            Ok::<_, StoreError>(deleted)
        })?;
        deleted
            .into_iter()
            .map(|(tenant, id)| {
                let corrupt = || StoreError::Corrupt(format!("expired token {id}: invalid ids"));
                Ok((
                    tenant.parse().map_err(|_| corrupt())?,
                    id.parse::<TokenId>().map_err(|_| corrupt())?,
                ))
            })
            .collect()
    }

    /// The CVC sweep's reads (docs/operations.md, "CVC retention"): the oldest marked rows
    /// created by `created_by`, through the partial index on the mark. The sweep writes
    /// through `update_token`.
    async fn tokens_holding_cvc(
        &self,
        created_by: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError> {
        let created_by = to_db_time(created_by);
        let rows: Vec<TokenRow> = with_conn!(self, |conn| {
            tokens::table
                // The bare column, as the partial index states it: a bound `= true` would
                // not match the index's predicate.
                .filter(tokens::holds_cvc)
                .filter(tokens::created_at.le(created_by))
                .order((tokens::created_at.asc(), tokens::id.asc()))
                .limit(i64::from(limit))
                .select(TokenRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(StoredToken::try_from).collect()
    }

    /// The next batch of the fingerprint backfill: tokens written before fingerprints
    /// existed get theirs, once.
    async fn unfingerprinted_tokens(&self, limit: u32) -> Result<Vec<StoredToken>, StoreError> {
        let rows: Vec<TokenRow> = with_conn!(self, |conn| {
            tokens::table
                .filter(tokens::fingerprint.eq(""))
                .limit(i64::from(limit))
                .select(TokenRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(StoredToken::try_from).collect()
    }

    /// One token of the backfill, if still unset.
    async fn set_token_fingerprint(
        &self,
        tenant: TenantId,
        id: TokenId,
        fingerprint: &str,
    ) -> Result<(), StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        with_write_conn!(self, |conn| {
            diesel::update(
                tokens::table
                    .filter(tokens::tenant_id.eq(&tenant))
                    .filter(tokens::id.eq(&id))
                    .filter(tokens::fingerprint.eq("")),
            )
            .set(tokens::fingerprint.eq(fingerprint))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(())
    }
}
