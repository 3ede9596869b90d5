//! The console's sessions: [`ConsoleSessionStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{ConsoleSessionRecord, ConsoleSessionStore, StoreError};
use tessera_domain::ApiKeyHash;
use time::OffsetDateTime;

detached! {
    ConsoleSessionStore {
        spawned fn insert_console_session(session: &ConsoleSessionRecord) -> ();
        caller fn get_console_session(id_hash: &[u8; 32]) -> Option<ConsoleSessionRecord>;
        spawned fn touch_console_session(id_hash: &[u8; 32], at: OffsetDateTime) -> ();
        spawned fn rekey_console_session(id_hash: &[u8; 32], key_hash: &ApiKeyHash, key_sealed: &[u8]) -> ();
        spawned fn delete_console_session(id_hash: &[u8; 32]) -> ();
        caller fn count_console_sessions() -> u64;
        spawned fn delete_expired_console_sessions(idle_before: OffsetDateTime, opened_before: OffsetDateTime) -> u64;
    }
}
