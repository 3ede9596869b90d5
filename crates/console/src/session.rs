//! Console sessions, held in the memory of the `api` process.
//!
//! Signing in exchanges an API key for a session: the browser gets only a random session id in
//! an `HttpOnly` cookie; the key stays here, as a [`Secret`], and is presented to the vault on
//! every request (so a regenerated key or a deleted application ends the session at once).
//!
//! * Ids are 32 bytes from the operating system's CSPRNG. The store is keyed by their SHA-256,
//!   so a lookup's timing depends on a hash the caller cannot steer, never on the id itself;
//!   CSRF tokens are compared in constant time.
//! * A session ends after `idle` without a request and after `max_age` in any case; expired
//!   entries are removed when met and whenever a session is created. At most
//!   [`MAX_SESSIONS`] are kept (the least recently used goes first).
//! * Several `api` replicas do not share sessions: a load balancer must keep a browser on one
//!   replica (session affinity), and a restart signs everybody out (docs/console.md).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tessera_domain::{ApplicationId, Principal, Secret, TenantId};

/// Most live sessions kept at once.
pub(crate) const MAX_SESSIONS: usize = 10_000;

/// Random bytes in a session id or a CSRF token.
const TOKEN_BYTES: usize = 32;

/// A fresh random token: [`TOKEN_BYTES`] from the OS CSPRNG, base64url without padding.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether `presented` equals `expected`, in time independent of where they differ.
pub(crate) fn tokens_match(presented: &str, expected: &str) -> bool {
    !expected.is_empty() && bool::from(presented.as_bytes().ct_eq(expected.as_bytes()))
}

/// The store's key for a session: SHA-256 of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SessionKey([u8; 32]);

impl SessionKey {
    fn of(id: &str) -> Self {
        Self(Sha256::digest(id.as_bytes()).into())
    }
}

struct Session {
    tenant_id: TenantId,
    application_id: ApplicationId,
    api_key: Secret<String>,
    csrf: Secret<String>,
    created: Instant,
    last_seen: Instant,
}

/// A live session as a request sees it.
pub(crate) struct LiveSession {
    /// Its key in the store.
    pub(crate) key: SessionKey,
    /// The tenant it was opened for.
    pub(crate) tenant_id: TenantId,
    /// The application whose key opened it.
    pub(crate) application_id: ApplicationId,
    /// That key.
    pub(crate) api_key: Secret<String>,
    /// The token every form of this session carries.
    pub(crate) csrf: Secret<String>,
}

/// What a presented session id leads to.
pub(crate) enum Lookup {
    /// A live session (now touched).
    Live(LiveSession),
    /// A session that existed and has expired (now removed).
    Expired,
    /// No such session.
    Unknown,
}

/// The sessions of this process.
pub(crate) struct SessionStore {
    sessions: Mutex<HashMap<SessionKey, Session>>,
    idle: Duration,
    max_age: Duration,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("live", &self.len())
            .field("idle", &self.idle)
            .field("max_age", &self.max_age)
            .finish()
    }
}

impl SessionStore {
    /// An empty store whose sessions last `idle` between requests and `max_age` at most.
    pub(crate) fn new(idle: Duration, max_age: Duration) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            idle,
            max_age,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, Session>> {
        // A panic while holding the lock leaves the map consistent (every update is one
        // insert or remove): keep serving.
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn expired(&self, s: &Session, now: Instant) -> bool {
        now.duration_since(s.last_seen) >= self.idle
            || now.duration_since(s.created) >= self.max_age
    }

    /// Opens a session for `principal` holding `api_key`; returns the id for the cookie.
    pub(crate) fn create(&self, principal: &Principal, api_key: Secret<String>) -> String {
        let id = random_token();
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.retain(|_, s| !self.expired(s, now));
        while sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| *k);
            match oldest {
                Some(k) => sessions.remove(&k),
                None => break,
            };
        }
        sessions.insert(
            SessionKey::of(&id),
            Session {
                tenant_id: principal.tenant_id(),
                application_id: principal.application_id(),
                api_key,
                csrf: Secret::new(random_token()),
                created: now,
                last_seen: now,
            },
        );
        id
    }

    /// The session with cookie value `id`, touched (its idle time restarts).
    pub(crate) fn lookup(&self, id: &str) -> Lookup {
        let key = SessionKey::of(id);
        let now = Instant::now();
        let mut sessions = self.lock();
        let Some(session) = sessions.get_mut(&key) else {
            return Lookup::Unknown;
        };
        if self.expired(session, now) {
            sessions.remove(&key);
            return Lookup::Expired;
        }
        session.last_seen = now;
        Lookup::Live(LiveSession {
            key,
            tenant_id: session.tenant_id,
            application_id: session.application_id,
            api_key: session.api_key.clone(),
            csrf: session.csrf.clone(),
        })
    }

    /// Ends the session with cookie value `id`, if any.
    pub(crate) fn end(&self, id: &str) {
        self.remove(SessionKey::of(id));
    }

    /// Ends a session.
    pub(crate) fn remove(&self, key: SessionKey) {
        self.lock().remove(&key);
    }

    /// Swaps the key a session holds (its application's key was regenerated from within it).
    pub(crate) fn replace_key(&self, key: SessionKey, api_key: Secret<String>) {
        if let Some(session) = self.lock().get_mut(&key) {
            session.api_key = api_key;
        }
    }

    /// Sessions held now (expired ones not yet removed included).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use tessera_domain::{Application, ApplicationType};

    use super::*;

    fn principal() -> Principal {
        let now = time::OffsetDateTime::now_utc();
        let id = ApplicationId::new();
        Principal::new(&Application {
            id,
            tenant_id: TenantId::new(),
            name: "a".into(),
            app_type: ApplicationType::Management,
            permissions: vec![],
            rules: vec![],
            created_by: id,
            created_at: now,
            modified_by: id,
            modified_at: now,
        })
    }

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
    fn sessions_live_and_end() {
        let store = SessionStore::new(Duration::from_secs(60), Duration::from_secs(600));
        let p = principal();
        let id = store.create(&p, Secret::new("key_x".into()));
        let Lookup::Live(live) = store.lookup(&id) else {
            panic!("live")
        };
        assert_eq!(live.tenant_id, p.tenant_id());
        assert_eq!(live.api_key.expose(), "key_x");
        assert!(matches!(store.lookup("forged"), Lookup::Unknown));
        store.end(&id);
        assert!(matches!(store.lookup(&id), Lookup::Unknown));
    }

    #[test]
    fn idle_and_absolute_expiry() {
        let idle = SessionStore::new(Duration::from_millis(30), Duration::from_secs(600));
        let id = idle.create(&principal(), Secret::new("k".into()));
        std::thread::sleep(Duration::from_millis(50));
        assert!(matches!(idle.lookup(&id), Lookup::Expired));
        assert!(matches!(idle.lookup(&id), Lookup::Unknown), "removed");

        let capped = SessionStore::new(Duration::from_secs(60), Duration::from_millis(60));
        let id = capped.create(&principal(), Secret::new("k".into()));
        for _ in 0..4 {
            std::thread::sleep(Duration::from_millis(10));
            assert!(matches!(capped.lookup(&id), Lookup::Live(_)), "activity");
        }
        std::thread::sleep(Duration::from_millis(40));
        assert!(
            matches!(capped.lookup(&id), Lookup::Expired),
            "activity does not extend past the maximum age"
        );
    }

    #[test]
    fn a_key_can_be_swapped_and_debug_shows_no_key() {
        let store = SessionStore::new(Duration::from_secs(60), Duration::from_secs(600));
        let id = store.create(&principal(), Secret::new("key_old".into()));
        let Lookup::Live(live) = store.lookup(&id) else {
            panic!("live")
        };
        store.replace_key(live.key, Secret::new("key_new".into()));
        let Lookup::Live(live) = store.lookup(&id) else {
            panic!("live")
        };
        assert_eq!(live.api_key.expose(), "key_new");
        let debug = format!("{store:?}");
        assert!(
            !debug.contains("key_new") && !debug.contains(&id),
            "{debug}"
        );
    }
}
