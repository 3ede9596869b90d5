//! Console sessions opened with one of an application's keys, on both backends: revoking that
//! key ends them (a session of another key goes on), and so does the application expiring;
//! an expired application's key opens no session.

use std::time::Duration;

use serde_json::json;
use tessera_domain::{
    vault::{SessionLimits, SessionLookup},
    ApplicationInput, Vault, VaultError,
};
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::vaults::{admin, vault};

backend_tests!(revoked_keys_and_expiry_end_console_sessions);

const LIMITS: SessionLimits = SessionLimits {
    idle: Duration::from_secs(3600),
    max_age: Duration::from_secs(3600),
};

async fn live(vault: &Vault, session: &str) -> bool {
    match vault
        .console_session(session, LIMITS)
        .await
        .expect("lookup")
    {
        SessionLookup::Live(_) => true,
        SessionLookup::Ended | SessionLookup::Unknown => false,
    }
}

async fn revoked_keys_and_expiry_end_console_sessions(t: &TestDatabase) {
    let vault = vault(t);
    let admin = admin(&vault, "acme").await;
    let at = tessera_domain::timestamp::now() + time::Duration::milliseconds(1_500);
    let input: ApplicationInput = serde_json::from_value(json!({
        "name": "operator", "type": "management", "permissions": ["application:read"],
        "expires_at": tessera_domain::timestamp::format(at)}))
    .expect("input");
    let first = vault
        .create_application(&admin, input)
        .await
        .expect("application");
    let id = first.application.id;
    let second = vault
        .create_application_key(&admin, id)
        .await
        .expect("second key");
    let (s1, _) = vault
        .open_console_session(first.api_key.expose())
        .await
        .expect("session of the first key");
    let (s2, _) = vault
        .open_console_session(second.api_key.expose())
        .await
        .expect("session of the second key");
    assert!(live(&vault, s1.expose()).await && live(&vault, s2.expose()).await);

    vault
        .revoke_application_key(&admin, id, second.key.id)
        .await
        .expect("revoke");
    assert!(!live(&vault, s2.expose()).await, "its key was revoked");
    assert!(
        live(&vault, s1.expose()).await,
        "another key's session goes on"
    );

    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert!(!live(&vault, s1.expose()).await, "the application expired");
    assert!(matches!(
        vault.open_console_session(first.api_key.expose()).await,
        Err(VaultError::Unauthenticated(_))
    ));
}
