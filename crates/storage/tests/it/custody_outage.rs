//! When the HSM or KMS holding the key-encrypting key stops answering: a running process
//! keeps serving with the data keys it holds, and what needs a new unwrap or wrap (a tenant it
//! has not read yet, a new tenant) is a 503-class error; a process starting then refuses to
//! start.

use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};

use async_trait::async_trait;
use serde_json::json;
use tessera_domain::{
    crypto::CryptoError,
    custody::{KeyCustody, WrapPurpose},
    error::ErrorClass,
    MasterKey, NewToken, TokenType, Vault,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{backend_tests, db::TestDatabase};
use zeroize::Zeroizing;

backend_tests!(
    a_custody_outage_keeps_held_keys_and_refuses_new_unwraps,
    start_up_unwraps_each_key_once
);

/// A file key as a custody that can be made unreachable, as a network HSM or a KMS can be,
/// and that counts its unwraps.
#[derive(Debug)]
struct Flaky {
    key: MasterKey,
    down: AtomicBool,
    unwraps: AtomicUsize,
}

impl Flaky {
    /// The custody of `key`, reachable, with no unwrap yet.
    fn new(key: MasterKey) -> Arc<Self> {
        Arc::new(Self {
            key,
            down: AtomicBool::new(false),
            unwraps: AtomicUsize::new(0),
        })
    }

    fn check(&self) -> Result<(), CryptoError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(CryptoError::CustodyUnavailable("connection refused".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl KeyCustody for Flaky {
    fn describe(&self) -> String {
        "flaky".into()
    }

    async fn wrap(&self, purpose: WrapPurpose<'_>, plain: &[u8]) -> Result<Vec<u8>, CryptoError> {
        self.check()?;
        self.key.wrap(purpose, plain).await
    }

    async fn unwrap(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        self.check()?;
        self.unwraps.fetch_add(1, Ordering::SeqCst);
        self.key.unwrap(purpose, wrapped).await
    }
}

async fn a_custody_outage_keeps_held_keys_and_refuses_new_unwraps(t: &TestDatabase) {
    let key = MasterKey::generate();
    let custody = Flaky::new(MasterKey::from_base64(key.to_base64().expose()).expect("copy"));
    let store = || Arc::new(DetachedStore::new(t.db.clone()));
    let vault = Vault::with_custody(store(), custody.clone(), vec![]);
    let admin = tessera_testkit::vault::tenant_admin(&vault, "held").await;
    let other = tessera_testkit::vault::tenant_admin(&Vault::new(store(), key), "unread").await;
    let token = vault
        .create_token(&admin, NewToken::new(TokenType::Token, json!("kept")))
        .await
        .expect("token");
    custody.down.store(true, Ordering::SeqCst);
    // The held data key still serves.
    let read = vault
        .get_token(&admin, token.id)
        .await
        .expect("still served");
    assert_eq!(read.data.expose(), &json!("kept"));
    // A tenant this process has not unwrapped, and a new tenant, wait for the custody.
    let unread = vault
        .create_token(&other, NewToken::new(TokenType::Token, json!("x")))
        .await
        .expect_err("needs an unwrap");
    assert_eq!(unread.class(), ErrorClass::Unavailable, "{unread}");
    assert!(
        unread.public_message().contains("HSM or KMS"),
        "{}",
        unread.public_message()
    );
    let new = vault.create_tenant("new").await.expect_err("needs a wrap");
    assert_eq!(new.class(), ErrorClass::Unavailable);
    // A process starting now refuses to.
    let starting = Vault::with_custody(store(), custody.clone(), vec![]);
    assert!(starting.verify_master_key().await.is_err());
    // Back up: everything works again.
    custody.down.store(false, Ordering::SeqCst);
    vault
        .create_token(&other, NewToken::new(TokenType::Token, json!("y")))
        .await
        .expect("after the outage");
}

/// Start-up unwraps each tenant's key once and keeps it: the first request of each tenant
/// does not call the custody again.
async fn start_up_unwraps_each_key_once(t: &TestDatabase) {
    let key = MasterKey::generate();
    let writer = Vault::new(
        Arc::new(DetachedStore::new(t.db.clone())),
        MasterKey::from_base64(key.to_base64().expose()).expect("copy"),
    );
    let mut admins = Vec::new();
    for name in ["a", "b", "c"] {
        let admin = tessera_testkit::vault::tenant_admin(&writer, name).await;
        let token = writer
            .create_token(&admin, NewToken::new(TokenType::Token, json!(name)))
            .await
            .expect("token");
        admins.push((admin, token.id));
    }
    let counting = Flaky::new(key);
    let vault = Vault::with_custody(
        Arc::new(DetachedStore::new(t.db.clone())),
        counting.clone(),
        vec![],
    );
    vault.verify_master_key().await.expect("start-up");
    let at_start = counting.unwraps.load(Ordering::SeqCst);
    for (admin, id) in &admins {
        vault.get_token(admin, id.clone()).await.expect("read");
    }
    assert_eq!(
        counting.unwraps.load(Ordering::SeqCst),
        at_start,
        "no unwrap after start-up"
    );
    // Start-up itself unwrapped each tenant's key once, and the vault keys.
    assert!(at_start >= admins.len(), "{at_start}");
}
