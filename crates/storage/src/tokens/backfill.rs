//! The fingerprint backfill: tokens written before fingerprints existed get theirs, once.

use diesel::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{StoreError, StoredToken},
    TenantId, TokenId,
};

use crate::{
    database::{with_conn, with_write_conn, Database, DbResultExt},
    rows::TokenRow,
    schema::tokens,
};

impl Database {
    /// `TokenStore::unfingerprinted_tokens`: the next batch of the fingerprint backfill.
    pub(super) async fn read_unfingerprinted(
        &self,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError> {
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

    /// `TokenStore::set_token_fingerprint`: one token of the backfill, if still unset.
    pub(super) async fn backfill_fingerprint(
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
