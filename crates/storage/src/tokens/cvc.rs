//! The CVC sweep's reads: cards whose sealed data may still hold a CVC past its retention
//! (docs/operations.md, "CVC retention"). The sweep writes through `TokenStore::update_token`.

use diesel::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use tessera_domain::store::{StoreError, StoredToken};
use time::OffsetDateTime;

use crate::{
    database::{with_conn, Database, DbResultExt},
    rows::{to_db_time, TokenRow},
    schema::tokens,
};

impl Database {
    /// `TokenStore::tokens_holding_cvc`: the oldest marked rows created by `created_by`,
    /// through the partial index on the mark.
    pub(super) async fn read_holding_cvc(
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
}
