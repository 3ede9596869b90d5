//! What reaches the database, on both backends: token plaintext and API keys never do, keys
//! are stored as their hash, and text PostgreSQL cannot store (NUL) is refused with a 400.

use serde_json::json;
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{one_tenant, Caller};

backend_tests!(
    stored_bytes_hold_no_plaintext_and_keys_are_hashed,
    nul_characters_are_a_400_on_every_backend,
);

async fn stored_bytes_hold_no_plaintext_and_keys_are_hashed(db: &TestDatabase) {
    use sha2::{Digest, Sha256};
    use tessera_domain::store::{ApplicationStore, TokenRecords};
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let secret = "SSN-078-05-1120-PLAINTEXT-MARKER";
    let body = json!({"type": "token", "data": {"ssn": secret}});
    let token_id = admin.create("/tokens", body).await;
    let id: tessera_domain::TokenId = token_id.parse().expect("uuid");
    let stored = db.db.get_token(t.tenant_id, id).await;
    let stored = stored.expect("get").expect("row");
    let haystack = |bytes: &[u8], needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(
        !haystack(&stored.ciphertext, secret.as_bytes()),
        "ciphertext column holds no plaintext"
    );
    let hash: [u8; 32] = Sha256::digest(t.admin_key.as_bytes()).into();
    let by_hash = db
        .db
        .find_application_by_key_hash(&tessera_domain::ApiKeyHash::from_bytes(&hash).expect("32"))
        .await
        .expect("lookup");
    assert!(by_hash.is_some(), "the key is stored as its SHA-256");
    if let Some(path) = db.sqlite_path() {
        // Search every byte SQLite wrote: the database file and its write-ahead log.
        let mut all = std::fs::read(path).expect("db file");
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        all.extend(std::fs::read(wal).unwrap_or_default());
        assert!(
            haystack(&all, token_id.as_bytes()),
            "sanity: the token row is on disk"
        );
        assert!(
            !haystack(&all, secret.as_bytes()),
            "token plaintext never reaches the disk"
        );
        assert!(
            !haystack(&all, t.admin_key.as_bytes()),
            "API keys never reach the disk"
        );
    }
}

/// PostgreSQL cannot store NUL in text; every place where caller text is stored or searched
/// refuses it with a 400 on both backends (a 500 must be a bug, docs/api.md, "Errors").
async fn nul_characters_are_a_400_on_every_backend(db: &TestDatabase) {
    let (app, t) = one_tenant(db).await;
    let admin = Caller::new(&app, &t.admin_key);
    let cases = [
        (
            "/applications",
            json!({"name": "a\u{0}b", "type": "private", "permissions": ["token:read"]}),
            "name",
        ),
        (
            "/tokens",
            json!({"type": "token", "data": 1, "metadata": {"k\u{0}": "v"}}),
            "metadata",
        ),
        (
            "/tokens",
            json!({"type": "token", "data": 1, "metadata": {"k": "v\u{0}"}}),
            "metadata.k",
        ),
        (
            "/proxies",
            json!({"name": "p\u{0}", "destination_url": "https://a.example.com"}),
            "name",
        ),
        (
            "/proxies",
            json!({"name": "p", "destination_url": "https://a.example.com/\u{0}"}),
            "destination_url",
        ),
        (
            "/proxies",
            json!({"name": "p", "destination_url": "https://a.example.com",
            "request_transform": {"code": "module.exports = async (r) => r; // \u{0}"}}),
            "request_transform.code",
        ),
    ];
    for (uri, body, field) in cases {
        admin.refuses(uri, body, field).await;
    }
    // NUL-containing text inside token data is encrypted, so it is accepted.
    let data = json!({"type": "token", "data": "a\u{0}b"});
    admin.post("/tokens", data).await.expect(201);
    for uri in [
        "/tokens?metadata.a=%00",
        "/tokens?metadata.%00=a",
        "/proxies?name=x%00",
    ] {
        admin.get(uri).await.expect(400);
    }
}
