//! The PKCS#11 custody against SoftHSM, a real PKCS#11 token: a non-extractable AES key does
//! the wrapping inside the token; wrappings are bound to their purpose; a key that could be
//! extracted, a wrong PIN and a missing token stop start-up; and a vault moves its keys from a
//! file key into the token with `rotate_master_key`, after which the file key opens nothing.
//!
//! One test function: the token's login is shared by the process, so the steps run in order.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::{path::Path, sync::Arc};

use serde_json::json;
use tessera_custody_pkcs11::{Pkcs11Config, Pkcs11Custody, Pkcs11Error};
use tessera_domain::{
    crypto::CryptoError,
    custody::{KeyCustody, WrapPurpose},
    MasterKey, NewToken, Secret, TenantId, TokenType, Vault,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{
    db::TestDatabase,
    softhsm::{KEY, LEAKY_KEY, PIN, TOKEN},
};

fn config(module: &Path, token: &str, key: &str, pin: &str) -> Pkcs11Config {
    Pkcs11Config {
        module: module.to_path_buf(),
        token_label: token.into(),
        key_label: key.into(),
        pin: Secret::new(pin.into()),
        lookup_time: std::time::Duration::from_millis(300),
    }
}

#[tokio::test]
async fn a_token_key_wraps_binds_refuses_and_takes_over_from_a_file_key() {
    let Some(hsm) = tessera_testkit::softhsm::token() else {
        return;
    };
    let module = &hsm.module;
    start_up_refusals_name_what_to_fix(module);
    let custody = Pkcs11Custody::open(&config(module, TOKEN, KEY, PIN)).expect("custody");
    assert!(custody.describe().contains("kek"));
    let (a, secret) = (TenantId::new(), [7u8; 32]);
    let wrapped = wrappings_are_fresh_and_bound_to_their_purpose(&custody, a, &secret).await;

    // A session the token dropped (the HSM restarted) is opened again on the next call.
    custody.forget_session();
    let reopened = custody
        .unwrap(WrapPurpose::DataKey(a), &wrapped)
        .await
        .expect("a new session");
    assert_eq!(reopened.as_slice(), &secret);

    // A vault's keys move from a file key into the token.
    for db in [
        Some(TestDatabase::sqlite().await),
        TestDatabase::postgres().await,
    ]
    .into_iter()
    .flatten()
    {
        moves_a_vault_into_the_token(&db, module).await;
    }
}

/// What stops start-up, naming what to fix (and never the PIN).
fn start_up_refusals_name_what_to_fix(module: &Path) {
    for (cfg, expected) in [
        (config(module, TOKEN, LEAKY_KEY, PIN), "extractable"),
        (config(module, TOKEN, "absent", PIN), "exactly one"),
        (
            config(module, "no-such-token", KEY, PIN),
            "no PKCS#11 token",
        ),
        (config(module, TOKEN, KEY, "0000"), "cannot log in"),
    ] {
        let err = Pkcs11Custody::open(&cfg).expect_err(expected);
        let text = err.to_string();
        assert!(text.contains(expected), "{text}");
        if expected == "no PKCS#11 token" {
            // Looked for again until the lookup time ran out, then refused as before.
            assert!(
                matches!(err, Pkcs11Error::NoToken { seconds, .. } if seconds > 0.1),
                "{text}"
            );
        }
        assert!(!text.contains(PIN), "no PIN in errors");
        if expected == "extractable" {
            assert!(matches!(err, Pkcs11Error::Extractable(_)));
        }
    }
}

/// `secret` wrapped for tenant `a`'s data key: not in clear, with a fresh IV each time, and
/// opened only for that purpose, untampered, and never as a file key's wrapping. Returns one
/// wrapping.
async fn wrappings_are_fresh_and_bound_to_their_purpose(
    custody: &Pkcs11Custody,
    a: TenantId,
    secret: &[u8; 32],
) -> Vec<u8> {
    let b = TenantId::new();
    let wrapped = custody
        .wrap(WrapPurpose::DataKey(a), secret)
        .await
        .expect("wrap");
    assert_eq!(wrapped[0], 2, "a PKCS#11 wrapping says so");
    assert!(
        !wrapped.windows(8).any(|w| w == &secret[..8]),
        "not in clear"
    );
    let again = custody
        .wrap(WrapPurpose::DataKey(a), secret)
        .await
        .expect("wrap");
    assert_ne!(wrapped, again, "a fresh IV each time");
    let opened = custody
        .unwrap(WrapPurpose::DataKey(a), &wrapped)
        .await
        .expect("unwrap");
    assert_eq!(opened.as_slice(), secret);
    // Bound to its purpose: not another tenant's, not a vault key; tampering is refused.
    for purpose in [
        WrapPurpose::DataKey(b),
        WrapPurpose::VaultKey("proxy-key-lookup"),
    ] {
        assert_eq!(
            custody
                .unwrap(purpose, &wrapped)
                .await
                .expect_err("other purpose"),
            CryptoError::Authentication
        );
    }
    let mut tampered = wrapped.clone();
    *tampered.last_mut().expect("byte") ^= 1;
    assert_eq!(
        custody
            .unwrap(WrapPurpose::DataKey(a), &tampered)
            .await
            .expect_err("tampered"),
        CryptoError::Authentication
    );
    let file = MasterKey::generate();
    let by_file = file
        .wrap(WrapPurpose::DataKey(a), secret)
        .await
        .expect("file wrap");
    assert_eq!(
        custody
            .unwrap(WrapPurpose::DataKey(a), &by_file)
            .await
            .expect_err("a file key's"),
        CryptoError::Authentication
    );
    wrapped
}

async fn moves_a_vault_into_the_token(db: &TestDatabase, module: &Path) {
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
        Arc::new(Pkcs11Custody::open(&config(module, TOKEN, KEY, PIN)).expect("custody"))
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
