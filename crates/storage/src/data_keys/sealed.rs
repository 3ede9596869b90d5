//! The rows the re-encryption job reads and rewrites: each table's sealed columns, in key
//! order after a cursor, and a write over them only if the row is as it was read.

use diesel::{BoolExpressionMethods, ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    hex,
    store::{SealedRow, SealedTable, StoreError},
    TenantId,
};
use time::PrimitiveDateTime;

use crate::{
    database::{with_conn, with_write_conn, Database, DbResultExt},
    rows::{from_db_time, to_db_time},
    schema::{console_sessions, idempotency_keys, proxies, tokens},
};

type Sealed = Option<Vec<u8>>;
/// A token's id, destinations, `modified_at`, data and mask.
type TokenColumns = (String, Option<String>, PrimitiveDateTime, Vec<u8>, Sealed);
/// A proxy's id, `modified_at` and its four sealed columns.
type ProxyColumns = (String, PrimitiveDateTime, Sealed, Sealed, Sealed, Sealed);

/// Up to `limit` of `tenant`'s rows of `table` whose key follows `after`, in key order.
pub(super) async fn rows(
    db: &Database,
    tenant: TenantId,
    table: SealedTable,
    after: &str,
    limit: u32,
) -> Result<Vec<SealedRow>, StoreError> {
    let (id, limit) = (tenant.to_string(), i64::from(limit));
    match table {
        SealedTable::Tokens => {
            let found: Vec<TokenColumns> = with_conn!(db, |conn| {
                tokens::table
                    .filter(tokens::tenant_id.eq(&id))
                    .filter(tokens::id.gt(after))
                    .order(tokens::id.asc())
                    .limit(limit)
                    .select((
                        tokens::id,
                        tokens::destinations,
                        tokens::modified_at,
                        tokens::data_ciphertext,
                        tokens::mask_ciphertext,
                    ))
                    .load(conn)
                    .await
                    .db()
            })?;
            Ok(found
                .into_iter()
                .map(|(key, destinations, modified, data, mask)| SealedRow {
                    key,
                    destinations,
                    modified_at: Some(from_db_time(modified)),
                    values: vec![Some(data), mask],
                })
                .collect())
        }
        SealedTable::Proxies => {
            let found: Vec<ProxyColumns> = with_conn!(db, |conn| {
                proxies::table
                    .filter(proxies::tenant_id.eq(&id))
                    .filter(proxies::id.gt(after))
                    .order(proxies::id.asc())
                    .limit(limit)
                    .select((
                        proxies::id,
                        proxies::modified_at,
                        proxies::configuration,
                        proxies::key_sealed,
                        proxies::request_transform_sealed,
                        proxies::response_transform_sealed,
                    ))
                    .load(conn)
                    .await
                    .db()
            })?;
            Ok(found
                .into_iter()
                .map(
                    |(key, modified, configuration, sealed_key, request, response)| SealedRow {
                        key,
                        destinations: None,
                        modified_at: Some(from_db_time(modified)),
                        values: vec![configuration, sealed_key, request, response],
                    },
                )
                .collect())
        }
        SealedTable::ConsoleSessions => {
            let after = hex::decode(after).unwrap_or_default();
            let found: Vec<(Vec<u8>, Vec<u8>)> = with_conn!(db, |conn| {
                console_sessions::table
                    .filter(console_sessions::tenant_id.eq(&id))
                    .filter(console_sessions::id_hash.gt(&after))
                    .order(console_sessions::id_hash.asc())
                    .limit(limit)
                    .select((console_sessions::id_hash, console_sessions::key_sealed))
                    .load(conn)
                    .await
                    .db()
            })?;
            Ok(found
                .into_iter()
                .map(|(id_hash, sealed_key)| SealedRow {
                    key: hex::encode(&id_hash),
                    destinations: None,
                    modified_at: None,
                    values: vec![Some(sealed_key)],
                })
                .collect())
        }
        SealedTable::IdempotentAnswers => idempotent_answers(db, &id, after, limit).await,
    }
}

/// Stored idempotent answers, keyed `application id ␀ idempotency key`.
async fn idempotent_answers(
    db: &Database,
    tenant: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<SealedRow>, StoreError> {
    let (app, key) = after.split_once('\0').unwrap_or((after, ""));
    let found: Vec<(String, String, Sealed)> = with_conn!(db, |conn| {
        idempotency_keys::table
            .filter(idempotency_keys::tenant_id.eq(tenant))
            .filter(idempotency_keys::response_sealed.is_not_null())
            .filter(
                idempotency_keys::application_id
                    .gt(app)
                    .or(idempotency_keys::application_id
                        .eq(app)
                        .and(idempotency_keys::idempotency_key.gt(key))),
            )
            .order((
                idempotency_keys::application_id.asc(),
                idempotency_keys::idempotency_key.asc(),
            ))
            .limit(limit)
            .select((
                idempotency_keys::application_id,
                idempotency_keys::idempotency_key,
                idempotency_keys::response_sealed,
            ))
            .load(conn)
            .await
            .db()
    })?;
    Ok(found
        .into_iter()
        .map(|(app, key, answer)| SealedRow {
            key: format!("{app}\0{key}"),
            destinations: None,
            modified_at: None,
            values: vec![answer],
        })
        .collect())
}

/// Writes `values` over `row`'s sealed columns if it is as it was read: a token or proxy
/// unchanged since (`modified_at`, and the data or key itself, which the CVC sweep and the
/// sealing of an earlier release's proxies change without it), a session's key unchanged.
pub(super) async fn replace(
    db: &Database,
    tenant: TenantId,
    table: SealedTable,
    row: &SealedRow,
    values: &[Sealed],
) -> Result<bool, StoreError> {
    let id = tenant.to_string();
    let column = |i: usize| values.get(i).cloned().flatten();
    let was = |i: usize| row.values.get(i).cloned().flatten().unwrap_or_default();
    let modified = row.modified_at.map(to_db_time);
    let updated = match (table, modified) {
        (SealedTable::Tokens, Some(modified)) => with_write_conn!(db, |conn| {
            diesel::update(
                tokens::table
                    .filter(tokens::tenant_id.eq(&id))
                    .filter(tokens::id.eq(&row.key))
                    .filter(tokens::modified_at.eq(modified))
                    .filter(tokens::data_ciphertext.eq(was(0))),
            )
            .set((
                tokens::data_ciphertext.eq(column(0).unwrap_or_else(|| was(0))),
                tokens::mask_ciphertext.eq(column(1)),
            ))
            .execute(conn)
            .await
            .db()
        })?,
        // A proxy of an earlier release not sealed yet (no key) is left to start-up's sealing.
        (SealedTable::Proxies, Some(modified))
            if row.values.get(1).is_some_and(Option::is_some) =>
        {
            with_write_conn!(db, |conn| {
                diesel::update(
                    proxies::table
                        .filter(proxies::tenant_id.eq(&id))
                        .filter(proxies::id.eq(&row.key))
                        .filter(proxies::modified_at.eq(modified))
                        .filter(proxies::key_sealed.eq(was(1))),
                )
                .set((
                    proxies::configuration.eq(column(0)),
                    proxies::key_sealed.eq(column(1)),
                    proxies::request_transform_sealed.eq(column(2)),
                    proxies::response_transform_sealed.eq(column(3)),
                ))
                .execute(conn)
                .await
                .db()
            })?
        }
        (SealedTable::ConsoleSessions, _) => {
            let id_hash = hex::decode(&row.key)
                .map_err(|_| StoreError::Backend("a console session's key".into()))?;
            let new = column(0).ok_or_else(|| StoreError::Backend("a session's key".into()))?;
            with_write_conn!(db, |conn| {
                diesel::update(
                    console_sessions::table
                        .filter(console_sessions::tenant_id.eq(&id))
                        .filter(console_sessions::id_hash.eq(&id_hash))
                        .filter(console_sessions::key_sealed.eq(was(0))),
                )
                .set(console_sessions::key_sealed.eq(new))
                .execute(conn)
                .await
                .db()
            })?
        }
        (SealedTable::Proxies, _) => 0,
        _ => {
            return Err(StoreError::Backend(format!(
                "{} rows are not rewritten",
                table.as_str()
            )))
        }
    };
    Ok(updated == 1)
}
