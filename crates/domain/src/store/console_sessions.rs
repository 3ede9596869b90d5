//! Stored web-console sessions.

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::{
    api_key::ApiKeyHash,
    ids::{ApplicationId, TenantId},
};

/// A console session as stored. It holds no usable credential: the session id appears only as
/// its SHA-256, and the application's key as the hash the applications table already holds and
/// sealed with the tenant's data key (for "Try it", which calls the gateway with it), so a copy
/// of the database without the master key opens no session and yields no key.
#[derive(Debug, Clone)]
pub struct ConsoleSessionRecord {
    /// SHA-256 of the session id (the browser's cookie value).
    pub id_hash: [u8; 32],
    /// The tenant it was opened for.
    pub tenant_id: TenantId,
    /// The application whose key opened it.
    pub application_id: ApplicationId,
    /// The hash of that key when the session was opened (or last re-keyed): once the
    /// application's key changes, the session no longer matches it and ends.
    pub key_hash: ApiKeyHash,
    /// That key, sealed with the tenant's data key (bound to `id_hash`).
    pub key_sealed: Vec<u8>,
    /// When it was opened.
    pub created_at: OffsetDateTime,
    /// Its last request.
    pub last_seen_at: OffsetDateTime,
}

/// Stored console sessions. Every replica reads them on each console request, so an ended
/// session is ended everywhere at once.
#[async_trait]
pub trait ConsoleSessionStore: Send + Sync {
    /// Stores a new session.
    async fn insert_console_session(
        &self,
        session: &ConsoleSessionRecord,
    ) -> Result<(), StoreError>;
    /// The session whose id hashes to `id_hash`.
    async fn get_console_session(
        &self,
        id_hash: &[u8; 32],
    ) -> Result<Option<ConsoleSessionRecord>, StoreError>;
    /// Records a request of the session at `at`.
    async fn touch_console_session(
        &self,
        id_hash: &[u8; 32],
        at: OffsetDateTime,
    ) -> Result<(), StoreError>;
    /// Binds the session to its application's new key (regenerated from within it): its hash
    /// and the key sealed.
    async fn rekey_console_session(
        &self,
        id_hash: &[u8; 32],
        key_hash: &ApiKeyHash,
        key_sealed: &[u8],
    ) -> Result<(), StoreError>;
    /// Ends the session.
    async fn delete_console_session(&self, id_hash: &[u8; 32]) -> Result<(), StoreError>;
    /// Sessions stored now (ended ones not yet pruned included).
    async fn count_console_sessions(&self) -> Result<u64, StoreError>;
    /// Ends the sessions idle since before `idle_before` or opened before `opened_before`;
    /// returns how many.
    async fn delete_expired_console_sessions(
        &self,
        idle_before: OffsetDateTime,
        opened_before: OffsetDateTime,
    ) -> Result<u64, StoreError>;
}
