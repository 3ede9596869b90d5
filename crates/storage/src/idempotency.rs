//! [`IdempotencyStore`] for both backends: one row per (tenant, application, key), claimed by
//! an `INSERT … ON CONFLICT DO NOTHING` so that of two concurrent requests exactly one wins.

use async_trait::async_trait;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use tessera_domain::store::{IdempotencyRecord, IdempotencyScope, IdempotencyStore, StoreError};
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::{
    database::{only_row, with_write_conn, Database, DbResultExt},
    rows::to_db_time,
    schema::idempotency_keys::{self, dsl},
};

/// The scope as the columns hold it.
fn columns(scope: &IdempotencyScope) -> (String, String) {
    (
        scope.tenant_id.to_string(),
        scope.application_id.to_string(),
    )
}

#[async_trait]
impl IdempotencyStore for Database {
    async fn claim_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        request_hash: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let (tenant, application) = columns(scope);
        let key = scope.key.as_str();
        let hash = request_hash.as_slice();
        let created_at = to_db_time(now);
        // The row may vanish between a lost insert and the read (released by its request):
        // then claim again.
        for _ in 0..3 {
            let existing: Option<(Vec<u8>, Option<Vec<u8>>, PrimitiveDateTime)> =
                with_write_conn!(self, |conn| {
                    let inserted = diesel::insert_into(idempotency_keys::table)
                        .values((
                            dsl::tenant_id.eq(&tenant),
                            dsl::application_id.eq(&application),
                            dsl::idempotency_key.eq(key),
                            dsl::request_hash.eq(hash),
                            dsl::created_at.eq(created_at),
                        ))
                        .on_conflict_do_nothing()
                        .execute(conn)
                        .await
                        .db()?;
                    if inserted == 1 {
                        return Ok(None);
                    }
                    dsl::idempotency_keys
                        .filter(dsl::tenant_id.eq(&tenant))
                        .filter(dsl::application_id.eq(&application))
                        .filter(dsl::idempotency_key.eq(key))
                        .select((dsl::request_hash, dsl::response_sealed, dsl::created_at))
                        .load(conn)
                        .await
                        .db()
                        .map(only_row)
                })?;
            if let Some((stored_hash, response_sealed, created_at)) = existing {
                let request_hash: [u8; 32] = stored_hash.as_slice().try_into().map_err(|_| {
                    StoreError::Corrupt("idempotency request hash is not 32 bytes".into())
                })?;
                return Ok(Some(IdempotencyRecord {
                    request_hash,
                    response_sealed,
                    created_at: created_at.assume_utc(),
                }));
            }
        }
        Err(StoreError::Conflict(
            "the idempotency key kept changing hands".into(),
        ))
    }

    async fn complete_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        response_sealed: &[u8],
    ) -> Result<(), StoreError> {
        let (tenant, application) = columns(scope);
        let key = scope.key.as_str();
        with_write_conn!(self, |conn| {
            diesel::update(
                dsl::idempotency_keys
                    .filter(dsl::tenant_id.eq(&tenant))
                    .filter(dsl::application_id.eq(&application))
                    .filter(dsl::idempotency_key.eq(key)),
            )
            .set(dsl::response_sealed.eq(response_sealed))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(())
    }

    async fn release_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        created_at: OffsetDateTime,
    ) -> Result<(), StoreError> {
        let (tenant, application) = columns(scope);
        let key = scope.key.as_str();
        let created_at = to_db_time(created_at);
        with_write_conn!(self, |conn| {
            diesel::delete(
                dsl::idempotency_keys
                    .filter(dsl::tenant_id.eq(&tenant))
                    .filter(dsl::application_id.eq(&application))
                    .filter(dsl::idempotency_key.eq(key))
                    .filter(dsl::created_at.eq(created_at)),
            )
            .execute(conn)
            .await
            .db()
        })?;
        Ok(())
    }

    async fn delete_idempotency_keys_before(
        &self,
        before: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        let before = to_db_time(before);
        let deleted = with_write_conn!(self, |conn| {
            diesel::delete(dsl::idempotency_keys.filter(dsl::created_at.lt(before)))
                .execute(conn)
                .await
                .db()
        })?;
        Ok(deleted as u64)
    }
}
