//! The PKCS#11 custody against SoftHSM, a real PKCS#11 token: a non-extractable AES key does
//! the wrapping inside the token; wrappings are bound to their purpose; a key that could be
//! extracted, a wrong PIN and a missing token stop start-up; and a vault moves its keys from a
//! file key into the token with `rotate_master_key`, after which the file key opens nothing.
//!
//! One test function: the token's login is shared by the process, so the steps run in order.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::{path::PathBuf, sync::Arc};

use cryptoki::{
    context::{CInitializeArgs, CInitializeFlags, Pkcs11},
    mechanism::Mechanism,
    object::{Attribute, ObjectClass},
    session::UserType,
    types::AuthPin,
};
use serde_json::json;
use tessera_custody_pkcs11::{Pkcs11Config, Pkcs11Custody, Pkcs11Error};
use tessera_domain::{
    crypto::CryptoError,
    custody::{KeyCustody, WrapPurpose},
    MasterKey, NewToken, Secret, TenantId, TokenType, Vault,
};
use tessera_storage::DetachedStore;
use tessera_testkit::db::TestDatabase;

const TOKEN: &str = "tessera-test";
const PIN: &str = "1234";

fn module() -> Option<PathBuf> {
    let found = [
        "/usr/lib/softhsm/libsofthsm2.so",
        "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
        "/usr/local/lib/softhsm/libsofthsm2.so",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but SoftHSM is not installed (apt-get install softhsm2): the PKCS#11 tests must run");
        }
        eprintln!("skipped: SoftHSM is not installed (apt-get install softhsm2)");
    }
    found
}

/// A fresh SoftHSM token directory with one token holding a non-extractable AES key
/// `kek` and an extractable one `leaky`.
fn token(module: &PathBuf, dir: &std::path::Path) {
    let conf = dir.join("softhsm2.conf");
    std::fs::create_dir_all(dir.join("tokens")).expect("tokens dir");
    std::fs::write(
        &conf,
        format!(
            "directories.tokendir = {}\nobjectstore.backend = file\n",
            dir.join("tokens").display()
        ),
    )
    .expect("conf");
    // SAFETY of the test: set once, before the module is loaded, in a single-test binary.
    std::env::set_var("SOFTHSM2_CONF", &conf);
    let pkcs11 = Pkcs11::new(module).expect("module");
    pkcs11
        .initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .expect("initialize");
    let free = pkcs11
        .get_slots_with_token()
        .expect("slots")
        .into_iter()
        .find(|s| !pkcs11.get_token_info(*s).expect("info").token_initialized())
        .expect("a free slot");
    let so_pin = AuthPin::new("5678".to_string().into());
    pkcs11.init_token(free, &so_pin, TOKEN).expect("init token");
    let slot = pkcs11
        .get_slots_with_token()
        .expect("slots")
        .into_iter()
        .find(|s| pkcs11.get_token_info(*s).expect("info").label().trim_end() == TOKEN)
        .expect("the new token");
    let session = pkcs11.open_rw_session(slot).expect("session");
    session
        .login(UserType::So, Some(&so_pin))
        .expect("so login");
    session
        .init_pin(&AuthPin::new(PIN.to_string().into()))
        .expect("user pin");
    session.logout().expect("logout");
    session
        .login(UserType::User, Some(&AuthPin::new(PIN.to_string().into())))
        .expect("user login");
    for (label, extractable) in [("kek", false), ("leaky", true)] {
        session
            .generate_key(
                &Mechanism::AesKeyGen,
                &[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::ValueLen(32.into()),
                    Attribute::Label(label.as_bytes().to_vec()),
                    Attribute::Token(true),
                    Attribute::Private(true),
                    Attribute::Sensitive(!extractable),
                    Attribute::Extractable(extractable),
                    Attribute::Encrypt(true),
                    Attribute::Decrypt(true),
                ],
            )
            .expect("generate key");
    }
    session.logout().expect("logout");
}

fn config(module: &PathBuf, token: &str, key: &str, pin: &str) -> Pkcs11Config {
    Pkcs11Config {
        module: module.clone(),
        token_label: token.into(),
        key_label: key.into(),
        pin: Secret::new(pin.into()),
    }
}

#[tokio::test]
async fn a_token_key_wraps_binds_refuses_and_takes_over_from_a_file_key() {
    let Some(module) = module() else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    token(&module, dir.path());

    // What stops start-up, naming what to fix.
    for (cfg, expected) in [
        (config(&module, TOKEN, "leaky", PIN), "extractable"),
        (config(&module, TOKEN, "absent", PIN), "exactly one"),
        (
            config(&module, "no-such-token", "kek", PIN),
            "no PKCS#11 token",
        ),
        (config(&module, TOKEN, "kek", "0000"), "cannot log in"),
    ] {
        let err = Pkcs11Custody::open(&cfg).expect_err(expected);
        let text = err.to_string();
        assert!(text.contains(expected), "{text}");
        assert!(!text.contains(PIN), "no PIN in errors");
        if expected == "extractable" {
            assert!(matches!(err, Pkcs11Error::Extractable(_)));
        }
    }

    let hsm = Pkcs11Custody::open(&config(&module, TOKEN, "kek", PIN)).expect("custody");
    assert!(hsm.describe().contains("kek"));
    let (a, b) = (TenantId::new(), TenantId::new());
    let secret = [7u8; 32];
    let wrapped = hsm
        .wrap(WrapPurpose::DataKey(a), &secret)
        .await
        .expect("wrap");
    assert_eq!(wrapped[0], 2, "a PKCS#11 wrapping says so");
    assert!(
        !wrapped.windows(8).any(|w| w == &secret[..8]),
        "not in clear"
    );
    let again = hsm
        .wrap(WrapPurpose::DataKey(a), &secret)
        .await
        .expect("wrap");
    assert_ne!(wrapped, again, "a fresh IV each time");
    let opened = hsm
        .unwrap(WrapPurpose::DataKey(a), &wrapped)
        .await
        .expect("unwrap");
    assert_eq!(opened.as_slice(), &secret);
    // Bound to its purpose: not another tenant's, not a vault key; tampering is refused.
    for purpose in [
        WrapPurpose::DataKey(b),
        WrapPurpose::VaultKey("proxy-key-lookup"),
    ] {
        assert_eq!(
            hsm.unwrap(purpose, &wrapped)
                .await
                .expect_err("other purpose"),
            CryptoError::Authentication
        );
    }
    let mut tampered = wrapped.clone();
    *tampered.last_mut().expect("byte") ^= 1;
    assert_eq!(
        hsm.unwrap(WrapPurpose::DataKey(a), &tampered)
            .await
            .expect_err("tampered"),
        CryptoError::Authentication
    );
    let file = MasterKey::generate();
    let by_file = file
        .wrap(WrapPurpose::DataKey(a), &secret)
        .await
        .expect("file wrap");
    assert_eq!(
        hsm.unwrap(WrapPurpose::DataKey(a), &by_file)
            .await
            .expect_err("a file key's"),
        CryptoError::Authentication
    );

    // A vault's keys move from a file key into the token.
    for db in [
        Some(TestDatabase::sqlite().await),
        TestDatabase::postgres().await,
    ]
    .into_iter()
    .flatten()
    {
        moves_a_vault_into_the_token(&db, &module).await;
    }
}

async fn moves_a_vault_into_the_token(db: &TestDatabase, module: &PathBuf) {
    let store = || Arc::new(DetachedStore::new(db.db.clone()));
    let file = MasterKey::generate();
    let copy = || MasterKey::from_base64(file.to_base64().expose()).expect("same key");
    let before = Vault::new(store(), copy());
    let admin = tessera_testkit::vault::tenant_admin(&before, "acme").await;
    let token = before
        .create_token(
            &admin,
            NewToken::new(TokenType::Card, json!({"number": "4242424242424242"})),
        )
        .await
        .expect("token");
    let hsm = || -> Arc<dyn KeyCustody> {
        Arc::new(Pkcs11Custody::open(&config(module, TOKEN, "kek", PIN)).expect("custody"))
    };
    let moving = Vault::with_custody(store(), hsm(), vec![Arc::new(copy())]);
    let report = moving.rotate_master_key().await.expect("rotation");
    assert_eq!(report.rewrapped, 1);
    let after = Vault::with_custody(store(), hsm(), vec![]);
    after
        .verify_master_key()
        .await
        .expect("the token opens every key");
    let read = after.get_token(&admin, token.id).await.expect("read");
    assert_eq!(read.data.expose()["number"], json!("4242424242424242"));
    let stale = Vault::new(store(), copy());
    assert!(
        stale.verify_master_key().await.is_err(),
        "the file key opens nothing now"
    );
}
