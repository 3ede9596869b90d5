//! [`ConsoleSessionStore`] for both backends: one row per session, keyed by the SHA-256 of its
//! id (the id itself is never stored).

use async_trait::async_trait;
use diesel::{
    BoolExpressionMethods, ExpressionMethods, QueryDsl, Queryable, Selectable, SelectableHelper,
};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{ConsoleSessionRecord, ConsoleSessionStore, StoreError},
    ApiKeyHash,
};
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::{
    database::{read_unique_row, with_conn, with_write_conn, Database, DbResultExt},
    rows::to_db_time,
    schema::console_sessions::{self, dsl},
};

/// A row as stored.
#[derive(Queryable, Selectable)]
#[diesel(table_name = console_sessions)]
struct SessionRow {
    id_hash: Vec<u8>,
    tenant_id: String,
    application_id: String,
    key_hash: Vec<u8>,
    key_sealed: Vec<u8>,
    created_at: PrimitiveDateTime,
    last_seen_at: PrimitiveDateTime,
}

impl SessionRow {
    fn into_record(self) -> Result<ConsoleSessionRecord, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("console session: invalid {what}"));
        Ok(ConsoleSessionRecord {
            id_hash: self
                .id_hash
                .as_slice()
                .try_into()
                .map_err(|_| corrupt("id hash"))?,
            tenant_id: self.tenant_id.parse().map_err(|_| corrupt("tenant id"))?,
            application_id: self
                .application_id
                .parse()
                .map_err(|_| corrupt("application id"))?,
            key_hash: ApiKeyHash::from_bytes(&self.key_hash).ok_or_else(|| corrupt("key hash"))?,
            key_sealed: self.key_sealed,
            created_at: self.created_at.assume_utc(),
            last_seen_at: self.last_seen_at.assume_utc(),
        })
    }
}

#[async_trait]
impl ConsoleSessionStore for Database {
    async fn insert_console_session(
        &self,
        session: &ConsoleSessionRecord,
    ) -> Result<(), StoreError> {
        let (tenant, application) = (
            session.tenant_id.to_string(),
            session.application_id.to_string(),
        );
        let (id_hash, key_hash, key_sealed) = (
            session.id_hash.as_slice(),
            session.key_hash.as_bytes().as_slice(),
            session.key_sealed.as_slice(),
        );
        let (created_at, last_seen_at) = (
            to_db_time(session.created_at),
            to_db_time(session.last_seen_at),
        );
        with_write_conn!(self, |conn| {
            diesel::insert_into(console_sessions::table)
                .values((
                    dsl::id_hash.eq(id_hash),
                    dsl::tenant_id.eq(&tenant),
                    dsl::application_id.eq(&application),
                    dsl::key_hash.eq(key_hash),
                    dsl::key_sealed.eq(key_sealed),
                    dsl::created_at.eq(created_at),
                    dsl::last_seen_at.eq(last_seen_at),
                ))
                .execute(conn)
                .await
                .db()
        })?;
        Ok(())
    }

    async fn get_console_session(
        &self,
        id_hash: &[u8; 32],
    ) -> Result<Option<ConsoleSessionRecord>, StoreError> {
        let id_hash = id_hash.as_slice();
        let row = read_unique_row!(
            self,
            console_sessions::table.filter(dsl::id_hash.eq(id_hash)),
            SessionRow
        )?;
        row.map(SessionRow::into_record).transpose()
    }

    async fn touch_console_session(
        &self,
        id_hash: &[u8; 32],
        at: OffsetDateTime,
    ) -> Result<(), StoreError> {
        let (id_hash, at) = (id_hash.as_slice(), to_db_time(at));
        with_write_conn!(self, |conn| {
            diesel::update(console_sessions::table.filter(dsl::id_hash.eq(id_hash)))
                .set(dsl::last_seen_at.eq(at))
                .execute(conn)
                .await
                .db()
        })?;
        Ok(())
    }

    async fn rekey_console_session(
        &self,
        id_hash: &[u8; 32],
        key_hash: &ApiKeyHash,
        key_sealed: &[u8],
    ) -> Result<(), StoreError> {
        let (id_hash, key_hash) = (id_hash.as_slice(), key_hash.as_bytes().as_slice());
        with_write_conn!(self, |conn| {
            diesel::update(console_sessions::table.filter(dsl::id_hash.eq(id_hash)))
                .set((dsl::key_hash.eq(key_hash), dsl::key_sealed.eq(key_sealed)))
                .execute(conn)
                .await
                .db()
        })?;
        Ok(())
    }

    async fn delete_console_session(&self, id_hash: &[u8; 32]) -> Result<(), StoreError> {
        let id_hash = id_hash.as_slice();
        with_write_conn!(self, |conn| {
            diesel::delete(console_sessions::table.filter(dsl::id_hash.eq(id_hash)))
                .execute(conn)
                .await
                .db()
        })?;
        Ok(())
    }

    async fn count_console_sessions(&self) -> Result<u64, StoreError> {
        let count: i64 = with_conn!(self, |conn| {
            console_sessions::table.count().get_result(conn).await.db()
        })?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn delete_expired_console_sessions(
        &self,
        idle_before: OffsetDateTime,
        opened_before: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        let (idle_before, opened_before) = (to_db_time(idle_before), to_db_time(opened_before));
        let deleted = with_write_conn!(self, |conn| {
            diesel::delete(
                console_sessions::table.filter(
                    dsl::last_seen_at
                        .le(idle_before)
                        .or(dsl::created_at.le(opened_before)),
                ),
            )
            .execute(conn)
            .await
            .db()
        })?;
        Ok(deleted as u64)
    }
}
