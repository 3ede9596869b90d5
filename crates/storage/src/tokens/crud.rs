//! Tokens by id: point reads, the optimistic update, delete, and the duplicate lookup of
//! `deduplicate_token` (new tokens are written by `insert`).

use diesel::{AsChangeset, BoolExpressionMethods, ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    store::{Duplicate, StoreError, StoredToken, TokenRecords, TokenUpdate},
    TenantId, TokenId,
};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::queries::delete_search_rows;
use crate::{
    database::{
        checkout, only_row, read_unique_row, with_conn, with_write_conn, Database, DbResultExt,
        Pools,
    },
    rows::{to_db_time, to_json, TokenMetadataRow, TokenRow, TokenSearchRow},
    schema::{token_associations, token_metadata, token_search_index, tokens},
};

/// The columns `update_token` writes; `None` leaves a column alone.
#[derive(AsChangeset)]
#[diesel(table_name = tokens)]
struct TokenChangeset {
    metadata: String,
    data_ciphertext: Option<Vec<u8>>,
    fingerprint: Option<String>,
    expires_at: Option<Option<PrimitiveDateTime>>,
    destinations: Option<Option<String>>,
    search_indexes: Option<Option<String>>,
    fingerprint_expression: Option<Option<String>>,
    holds_cvc: Option<bool>,
    mask_ciphertext: Option<Option<Vec<u8>>>,
    modified_by: String,
    modified_at: PrimitiveDateTime,
}

impl TokenChangeset {
    /// What `update` writes to the token's row.
    fn of(update: &TokenUpdate) -> Result<Self, StoreError> {
        Ok(Self {
            metadata: serde_json::to_string(&update.metadata)
                .map_err(|e| StoreError::Backend(format!("serialising metadata: {e}")))?,
            data_ciphertext: update.ciphertext.clone(),
            fingerprint: update.fingerprint.clone(),
            expires_at: Some(update.expires_at.map(to_db_time)),
            destinations: update
                .destinations
                .as_ref()
                .map(|d| d.as_ref().map(|d| d.to_json())),
            search_indexes: update
                .search
                .as_ref()
                .map(|(indexes, _)| indexes.as_ref().map(to_json)),
            fingerprint_expression: update.fingerprint_expression.clone(),
            holds_cvc: update.holds_cvc,
            mask_ciphertext: update.mask.clone(),
            modified_by: update.modified_by.to_string(),
            modified_at: to_db_time(update.modified_at),
        })
    }
}

#[async_trait::async_trait]
impl TokenRecords for Database {
    /// One point read.
    async fn get_token(
        &self,
        tenant: TenantId,
        id: TokenId,
    ) -> Result<Option<StoredToken>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let row = read_unique_row!(
            self,
            tokens::table
                .filter(tokens::tenant_id.eq(&tenant))
                .filter(tokens::id.eq(&id)),
            TokenRow
        )?;
        row.map(StoredToken::try_from).transpose()
    }

    /// Point reads, pipelined on PostgreSQL.
    async fn get_tokens(
        &self,
        tenant: TenantId,
        ids: &[TokenId],
    ) -> Result<Vec<StoredToken>, StoreError> {
        // Each id once, as `IN (…)` would have answered.
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        match &self.pools {
            // SQLite spells `eq_any` as `IN (?, ?, …)`, a statement that changes with the
            // number of ids, which diesel therefore prepares anew on every call; `get_token`'s
            // cached point-read statement, once per id, costs less on a connection run
            // in-process.
            Pools::Sqlite { .. } => {
                let mut found = Vec::with_capacity(ids.len());
                for id in ids {
                    found.extend(self.get_token(tenant, id).await?);
                }
                Ok(found)
            }
            // PostgreSQL: the same point read per id, all sent at once on one connection
            // (pipelined: one round trip). Not `id = ANY($2)`: its generic plan may scan the
            // tenant's tokens through another index (seen on a young table before ANALYZE,
            // which made the server the bottleneck), where equality on both key columns is
            // always one primary-key probe.
            Pools::Postgres { reads, .. } => {
                let tenant = tenant.to_string();
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                let object = checkout(reads.local()?).await?;
                let conn: &diesel_async::AsyncPgConnection = &object;
                let reads = ids.iter().map(|id| {
                    let mut conn = conn;
                    let tenant = &tenant;
                    async move {
                        tokens::table
                            .filter(tokens::tenant_id.eq(tenant))
                            .filter(tokens::id.eq(id))
                            .select(TokenRow::as_select())
                            .load::<TokenRow>(&mut conn)
                            .await
                    }
                });
                futures_util::future::try_join_all(reads)
                    .await
                    .db()?
                    .into_iter()
                    .flatten()
                    .map(StoredToken::try_from)
                    .collect()
            }
        }
    }

    /// The token, its metadata and its links, in one transaction.
    async fn delete_token(&self, tenant: TenantId, id: TokenId) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let deleted = with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                // The token's row first: that waits for an update of the token in flight,
                // so the metadata deleted next includes what that update wrote (metadata rows
                // reference their tenant, not their token: docs/architecture.md "Writing
                // tokens").
                let deleted = diesel::delete(
                    tokens::table
                        .filter(tokens::tenant_id.eq(&tenant))
                        .filter(tokens::id.eq(&id)),
                )
                .execute(conn)
                .await?;
                diesel::delete(
                    token_metadata::table
                        .filter(token_metadata::tenant_id.eq(&tenant))
                        .filter(token_metadata::token_id.eq(&id)),
                )
                .execute(conn)
                .await?;
                delete_search_rows!(conn, &tenant, &id).await?;
                // Links in both directions go with the token; the tokens at the other end stay.
                diesel::delete(
                    token_associations::table
                        .filter(token_associations::tenant_id.eq(&tenant))
                        .filter(
                            token_associations::parent_id
                                .eq(&id)
                                .or(token_associations::child_id.eq(&id)),
                        ),
                )
                .execute(conn)
                .await?;
                Ok(deleted)
            })
            .await
            .db()
        })?;
        Ok(deleted == 1)
    }

    /// An optimistic write of the row, its metadata replaced.
    async fn update_token(&self, update: &TokenUpdate) -> Result<bool, StoreError> {
        let (tenant, id) = (update.tenant_id.to_string(), update.id.to_string());
        let expected = to_db_time(update.expected_modified_at);
        let live_at = to_db_time(update.live_at);
        let holding = update.only_if_holding_cvc;
        let changes = TokenChangeset::of(update)?;
        let search = update.search.as_ref().map(|(_, hashes)| {
            TokenSearchRow::hashes(update.tenant_id, &update.id, &update.container, hashes)
        });
        let metadata = TokenMetadataRow::pairs(
            update.tenant_id,
            &update.id,
            update.created_at,
            &update.metadata,
        );
        with_write_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                let updated = diesel::update(
                    tokens::table
                        .filter(tokens::tenant_id.eq(&tenant))
                        .filter(tokens::id.eq(&id))
                        .filter(tokens::modified_at.eq(expected))
                        // `holds_cvc >= true` when only a marked row may be written, else
                        // always true: one statement text either way.
                        .filter(tokens::holds_cvc.ge(holding))
                        .filter(
                            tokens::expires_at
                                .is_null()
                                .or(tokens::expires_at.gt(live_at)),
                        ),
                )
                .set(&changes)
                .execute(conn)
                .await?;
                if updated != 1 {
                    return Ok(false);
                }
                diesel::delete(
                    token_metadata::table
                        .filter(token_metadata::tenant_id.eq(&tenant))
                        .filter(token_metadata::token_id.eq(&id)),
                )
                .execute(conn)
                .await?;
                for pair in &metadata {
                    diesel::insert_into(token_metadata::table)
                        .values(pair)
                        .execute(conn)
                        .await?;
                }
                if let Some(search) = &search {
                    delete_search_rows!(conn, &tenant, &id).await?;
                    for row in search {
                        diesel::insert_into(token_search_index::table)
                            .values(row)
                            .execute(conn)
                            .await?;
                    }
                }
                Ok(true)
            })
            .await
            .db()
        })
    }

    /// The oldest token of `tenant` that `key` describes, live at `live_at`.
    async fn find_duplicate_token(
        &self,
        tenant: TenantId,
        key: &Duplicate<'_>,
        live_at: OffsetDateTime,
    ) -> Result<Option<StoredToken>, StoreError> {
        let tenant = tenant.to_string();
        let live_at = to_db_time(live_at);
        let row = with_conn!(self, |conn| {
            let mut q = tokens::table
                .filter(tokens::tenant_id.eq(&tenant))
                .filter(tokens::fingerprint.eq(key.fingerprint))
                .filter(tokens::token_type.eq(key.token_type.as_str()))
                .filter(tokens::container.eq(key.container.as_str()))
                .into_boxed();
            q = match key.fingerprint_expression {
                Some(expression) => q.filter(tokens::fingerprint_expression.eq(expression)),
                None => q.filter(tokens::fingerprint_expression.is_null()),
            };
            q.filter(
                tokens::expires_at
                    .is_null()
                    .or(tokens::expires_at.gt(live_at)),
            )
            .order((tokens::created_at.asc(), tokens::id.asc()))
            .limit(1)
            .select(TokenRow::as_select())
            .load(conn)
            .await
            .db()
            .map(only_row)
        })?;
        row.map(StoredToken::try_from).transpose()
    }
}
