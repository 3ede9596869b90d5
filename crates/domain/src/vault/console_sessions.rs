//! Web-console sessions: opened by presenting an API key, then carried by a random id in a
//! cookie. They are stored (every replica serves every session, and a restart signs nobody
//! out) and read on every console request, never cached, so a session ended anywhere is ended
//! everywhere at once (docs/console.md, "Sessions").
//!
//! * The id is 32 bytes from the operating system's CSPRNG. The store holds only its SHA-256.
//!   A session acts as its application, matched by the hash of the key that opened it; the key
//!   itself is kept only sealed with the tenant's data key (the console's "Try it" calls the
//!   gateway with it). A copy of the database without the master key opens no session and
//!   yields no key.
//! * The application's key going (revoked, regenerated, or the application deleted), or the
//!   application expiring, ends the session at its next request, as does sign-out at once.
//! * The CSRF token of a session is derived from its id (a domain-separated SHA-256), so every
//!   replica knows it without storing it, and it reveals nothing of the id.

use std::time::Duration;

use aes_gcm::aead::{rand_core::RngCore, OsRng};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;

use super::Vault;
use crate::{
    access::Principal, api_key::ApiKey, error::VaultError, ids::TenantId, secret::Secret,
    store::ConsoleSessionRecord, timestamp,
};

/// Random bytes in a session id.
const ID_BYTES: usize = 32;

/// What a session's sealed key is sealed for (with the session's id hash as the record).
pub(super) const KEY_PURPOSE: &str = "console-session-key";

/// Separates the CSRF derivation from the store's hash of the same id.
const CSRF_CONTEXT: &[u8] = b"tessera console csrf\0";

/// How long sessions last.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// A session ends after this long without a request.
    pub idle: Duration,
    /// A session ends after this long in any case.
    pub max_age: Duration,
}

/// A live session, as a console request sees it.
#[derive(Debug)]
pub struct ConsoleSession {
    /// The application it acts as, read from the store just now.
    pub principal: Principal,
    /// SHA-256 of its id: how it is named to the store.
    pub id_hash: [u8; 32],
    /// The token its forms carry.
    pub csrf: Secret<String>,
    /// The application's key that opened it (for "Try it"; never shown).
    pub api_key: Secret<String>,
}

/// What a presented session id leads to.
#[derive(Debug)]
pub enum SessionLookup {
    /// A live session (now touched).
    Live(Box<ConsoleSession>),
    /// A session that existed and has ended (expired, or its key is no longer the
    /// application's); now removed.
    Ended,
    /// No such session.
    Unknown,
}

/// SHA-256 of a session id.
pub fn session_id_hash(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// The CSRF token of the session whose id is `id`.
pub fn session_csrf(id: &str) -> Secret<String> {
    let mut h = Sha256::new();
    h.update(CSRF_CONTEXT);
    h.update(id.as_bytes());
    Secret::new(URL_SAFE_NO_PAD.encode(h.finalize()))
}

/// A fresh random token: 32 bytes from the OS CSPRNG, base64url without padding.
pub fn random_token() -> String {
    let mut bytes = [0u8; ID_BYTES];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether `presented` equals `expected`, in time independent of where they differ; an empty
/// expectation never matches.
pub fn tokens_match(presented: &str, expected: &str) -> bool {
    !expected.is_empty() && bool::from(presented.as_bytes().ct_eq(expected.as_bytes()))
}

impl SessionLimits {
    fn ended(&self, s: &ConsoleSessionRecord, now: OffsetDateTime) -> bool {
        now - s.last_seen_at >= self.idle || now - s.created_at >= self.max_age
    }
}

impl Vault {
    /// Opens a session for the holder of the API key `presented`: the new session's id (for
    /// the cookie) and who it acts as. A missing, malformed or unknown key is refused as
    /// [`Vault::authenticate`] refuses it.
    pub async fn open_console_session(
        &self,
        presented: &str,
    ) -> Result<(Secret<String>, Principal), VaultError> {
        let principal = self.authenticate(Some(presented)).await?;
        let key = ApiKey::parse(presented)
            .ok_or(VaultError::Unauthenticated("the API key is malformed"))?;
        let id = random_token();
        let id_hash = session_id_hash(&id);
        let now = timestamp::now();
        let key_sealed = self
            .seal_session_key(principal.tenant_id(), &id_hash, presented)
            .await?;
        self.store
            .insert_console_session(&ConsoleSessionRecord {
                id_hash,
                tenant_id: principal.tenant_id(),
                application_id: principal.application_id(),
                key_hash: key.hash(),
                key_sealed,
                created_at: now,
                last_seen_at: now,
            })
            .await?;
        Ok((Secret::new(id), principal))
    }

    /// The session whose cookie value is `id`, touched; see [`SessionLookup`].
    pub async fn console_session(
        &self,
        id: &str,
        limits: SessionLimits,
    ) -> Result<SessionLookup, VaultError> {
        let id_hash = session_id_hash(id);
        let Some(stored) = self.store.get_console_session(&id_hash).await? else {
            return Ok(SessionLookup::Unknown);
        };
        let now = timestamp::now();
        if limits.ended(&stored, now) {
            self.store.delete_console_session(&id_hash).await?;
            return Ok(SessionLookup::Ended);
        }
        // Uncached: a key revoked or regenerated, or an application deleted, on another
        // replica ends the session at its next request; so does the application expiring.
        let current = self
            .store
            .find_application_by_key_hash(&stored.key_hash)
            .await?
            .filter(|app| {
                app.key.key_hash.verify(&stored.key_hash)
                    && app.application.id == stored.application_id
                    && app.application.tenant_id == stored.tenant_id
                    && !app.application.is_expired(now)
            });
        let Some(current) = current else {
            self.store.delete_console_session(&id_hash).await?;
            return Ok(SessionLookup::Ended);
        };
        let opened = self
            .keys
            .data_key(self.store.as_ref(), stored.tenant_id)
            .await?
            .open_record(stored.tenant_id, KEY_PURPOSE, &id_hash, &stored.key_sealed)
            .ok()
            .and_then(|plain| String::from_utf8(plain.to_vec()).ok());
        let Some(api_key) = opened else {
            // Sealed for another row or tenant, or altered: written by someone with access
            // to the database, not by the vault. Such a row opens nothing.
            tracing::warn!(tenant = %stored.tenant_id, "a console session row does not open: ended");
            self.store.delete_console_session(&id_hash).await?;
            return Ok(SessionLookup::Ended);
        };
        self.store.touch_console_session(&id_hash, now).await?;
        Ok(SessionLookup::Live(Box::new(ConsoleSession {
            principal: self.principal(&current.application),
            id_hash,
            csrf: session_csrf(id),
            api_key: Secret::new(api_key),
        })))
    }

    /// `key` sealed with `tenant`'s data key for the session named by `id_hash`.
    async fn seal_session_key(
        &self,
        tenant: TenantId,
        id_hash: &[u8; 32],
        key: &str,
    ) -> Result<Vec<u8>, VaultError> {
        Ok(self
            .keys
            .data_key(self.store.as_ref(), tenant)
            .await?
            .seal_record(tenant, KEY_PURPOSE, id_hash, key.as_bytes())?)
    }

    /// Binds a session to its application's new key `presented` (regenerated from within the
    /// session), so that it goes on.
    pub async fn rekey_console_session(
        &self,
        session: &ConsoleSession,
        presented: &str,
    ) -> Result<(), VaultError> {
        let key = ApiKey::parse(presented)
            .ok_or(VaultError::Unauthenticated("the API key is malformed"))?;
        let tenant = session.principal.tenant_id();
        let sealed = self
            .seal_session_key(tenant, &session.id_hash, presented)
            .await?;
        Ok(self
            .store
            .rekey_console_session(&session.id_hash, &key.hash(), &sealed)
            .await?)
    }

    /// Ends the session named by `id_hash` (sign-out), on every replica at once.
    pub async fn end_console_session(&self, id_hash: &[u8; 32]) -> Result<(), VaultError> {
        Ok(self.store.delete_console_session(id_hash).await?)
    }

    /// Sessions stored now (ended ones not yet pruned included), for tests and operators.
    pub async fn console_sessions_stored(&self) -> Result<u64, VaultError> {
        Ok(self.store.count_console_sessions().await?)
    }

    /// Removes every ended session; returns how many.
    pub async fn prune_console_sessions(&self, limits: SessionLimits) -> Result<u64, VaultError> {
        let now = timestamp::now();
        Ok(self
            .store
            .delete_expired_console_sessions(now - limits.idle, now - limits.max_age)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(tokens_match(&a, &a.clone()));
        assert!(!tokens_match(&a, &b));
        assert!(!tokens_match(&a[..42], &a));
        assert!(!tokens_match("", ""), "an empty expectation never matches");
    }

    #[test]
    fn the_csrf_token_is_derived_and_is_not_the_stored_hash() {
        let id = random_token();
        assert_eq!(session_csrf(&id).expose(), session_csrf(&id).expose());
        assert_ne!(
            session_csrf(&id).expose(),
            &URL_SAFE_NO_PAD.encode(session_id_hash(&id))
        );
        assert_ne!(
            session_csrf(&id).expose(),
            session_csrf(&random_token()).expose()
        );
    }
}
