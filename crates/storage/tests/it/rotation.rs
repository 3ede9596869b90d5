//! Master-key rotation through the vault, on both backends: tenants' data keys are re-wrapped
//! under the new key, token data stays readable, fingerprints and search indexes stay as they
//! are (their keys are the tenant's, not the master key's), the old key stops opening the
//! data, and a second run changes nothing.

use std::sync::Arc;

use serde_json::json;
use tessera_domain::{
    proxy::Proxy, search::TokenSearchRequest, store::TenantStore, MasterKey, NewToken, Rotation,
    TokenId, Vault,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{backend_tests, db::TestDatabase};

backend_tests!(
    rotation_rewraps_every_tenant_once,
    after_rotation_the_new_key_alone_opens_tokens_and_proxies,
    a_tenant_no_configured_key_opens_stops_the_rotation,
    wrapped_keys_are_replaced_only_if_unchanged,
    an_unfinished_rotation_is_caught_at_start_up,
    webhook_signing_keys_move_with_the_master_key,
);

fn copy(key: &MasterKey) -> MasterKey {
    MasterKey::from_base64(key.to_base64().expose()).expect("same key")
}

fn vault(t: &TestDatabase, master: MasterKey, previous: Vec<MasterKey>) -> Vault {
    Vault::with_master_keys(Arc::new(DetachedStore::new(t.db.clone())), master, previous)
}

/// What a rotation must keep readable: two tenants with a token each (admin key, token id,
/// tenant name, which is also the token's secret and what its search index renders, and its
/// fingerprint) and a proxy of the first.
struct Data {
    tokens: Vec<(String, TokenId, &'static str, String)>,
    proxy: Proxy,
}

/// Two tenants with a token each and a proxy, written under `old`.
async fn data_under(t: &TestDatabase, old: &MasterKey) -> Data {
    let before = vault(t, copy(old), vec![]);
    let mut tokens = Vec::new();
    for name in ["acme", "globex"] {
        let created = before.create_tenant(name).await.expect("tenant");
        let admin = before
            .authenticate(Some(created.api_key.expose()))
            .await
            .expect("admin");
        let input: NewToken = serde_json::from_value(json!({
            "type": "token",
            "data": {"secret": name},
            "search_indexes": ["{{ data.secret }}"],
        }))
        .expect("input");
        let token = before.create_token(&admin, input).await.expect("token");
        tokens.push((
            created.api_key.expose().to_string(),
            token.id,
            name,
            token.fingerprint,
        ));
    }
    // A proxy is found through a lookup key that the master key wraps: it must survive too.
    let first = before
        .authenticate(Some(&tokens[0].0))
        .await
        .expect("admin");
    let proxy = before
        .create_proxy(
            &first,
            serde_json::from_value(
                json!({"name": "p", "destination_url": "https://api.example.com"}),
            )
            .expect("proxy input"),
        )
        .await
        .expect("proxy");
    Data { tokens, proxy }
}

/// Whether a vault with `master` alone opens the data.
async fn opens(t: &TestDatabase, master: &MasterKey) -> bool {
    vault(t, copy(master), vec![])
        .verify_master_key()
        .await
        .is_ok()
}

async fn rotation_rewraps_every_tenant_once(t: &TestDatabase) {
    let (old, new) = (MasterKey::generate(), MasterKey::generate());
    data_under(t, &old).await;
    // The new key alone does not open the data yet; with the old one as previous it does.
    assert!(!opens(t, &new).await);
    let during = vault(t, copy(&new), vec![copy(&old)]);
    during
        .verify_master_key()
        .await
        .expect("previous key opens");
    assert_eq!(
        during.rotate_master_key().await.expect("rotate"),
        Rotation {
            rewrapped: 2,
            already_current: 0,
            changed_concurrently: 0
        }
    );
    assert_eq!(
        during.rotate_master_key().await.expect("again"),
        Rotation {
            rewrapped: 0,
            already_current: 2,
            changed_concurrently: 0
        },
        "a second run changes nothing"
    );
}

/// After the rotation the new key alone reads every token and finds the proxy by its key; the
/// old key opens nothing.
async fn after_rotation_the_new_key_alone_opens_tokens_and_proxies(t: &TestDatabase) {
    let (old, new) = (MasterKey::generate(), MasterKey::generate());
    let data = data_under(t, &old).await;
    let during = vault(t, copy(&new), vec![copy(&old)]);
    during.rotate_master_key().await.expect("rotate");
    let after = vault(t, copy(&new), vec![]);
    after.verify_master_key().await.expect("new key opens");
    let found = after
        .proxy_by_key(data.proxy.key.expose())
        .await
        .expect("lookup")
        .expect("the proxy is still found by its key");
    assert_eq!(found.id, data.proxy.id);
    for (key, id, name, fingerprint) in &data.tokens {
        let caller = after.authenticate(Some(key)).await.expect("admin");
        let token = after
            .get_token(&caller, id.clone())
            .await
            .expect("readable");
        assert_eq!(token.data.expose(), &json!({"secret": name}));
        assert_eq!(&token.fingerprint, fingerprint, "fingerprints stay");
        let search: TokenSearchRequest =
            serde_json::from_value(json!({"query": format!("data:{name}")})).expect("search");
        let search = search.validate().expect("valid");
        let found = after
            .search_tokens(&caller, &search.search, search.page)
            .await
            .expect("search");
        let found: Vec<&TokenId> = found.items.iter().map(|t| &t.id).collect();
        assert_eq!(found, vec![id], "the search index still finds it");
    }
    assert!(!opens(t, &old).await);
}

/// A tenant that no configured key opens stops the rotation with an error.
async fn a_tenant_no_configured_key_opens_stops_the_rotation(t: &TestDatabase) {
    data_under(t, &MasterKey::generate()).await;
    let stranger = vault(t, MasterKey::generate(), vec![MasterKey::generate()]);
    assert!(stranger.rotate_master_key().await.is_err());
}

async fn wrapped_keys_are_replaced_only_if_unchanged(t: &TestDatabase) {
    let v = vault(t, MasterKey::generate(), vec![]);
    let created = v.create_tenant("acme").await.expect("tenant");
    let id = created.tenant.id;
    let stored = t.db.get_tenant(id).await.expect("read").expect("exists");
    assert_eq!(t.db.list_tenants().await.expect("list").len(), 1);
    assert!(!t
        .db
        .replace_wrapped_data_key(id, b"not the stored key", b"new")
        .await
        .expect("update"));
    assert!(t
        .db
        .replace_wrapped_data_key(id, &stored.wrapped_data_key, b"new")
        .await
        .expect("update"));
    let now = t.db.get_tenant(id).await.expect("read").expect("exists");
    assert_eq!(now.wrapped_data_key, b"new");
}

/// A rotation that stopped after some tenants (or a tenant created meanwhile by a process still
/// on the old key): the start-up check, which opens every tenant, refuses the new key alone, so
/// the old key is not dropped while data still needs it.
async fn an_unfinished_rotation_is_caught_at_start_up(t: &TestDatabase) {
    let (old, new) = (MasterKey::generate(), MasterKey::generate());
    let before = vault(t, copy(&old), vec![]);
    let first = before
        .create_tenant("first")
        .await
        .expect("tenant")
        .tenant
        .id;
    before.create_tenant("second").await.expect("tenant");
    // Only the oldest tenant was re-wrapped before the rotation stopped.
    let stored = t.db.get_tenant(first).await.expect("read").expect("exists");
    let rewrapped = old
        .rewrap_data_key(first, &stored.wrapped_data_key, &new)
        .expect("rewrap");
    assert!(t
        .db
        .replace_wrapped_data_key(first, &stored.wrapped_data_key, &rewrapped)
        .await
        .expect("update"));
    assert!(
        vault(t, copy(&new), vec![])
            .verify_master_key()
            .await
            .is_err(),
        "the second tenant still needs the old key"
    );
    let during = vault(t, copy(&new), vec![copy(&old)]);
    during
        .verify_master_key()
        .await
        .expect("both keys open everything");
    assert_eq!(
        during.rotate_master_key().await.expect("finish"),
        Rotation {
            rewrapped: 1,
            already_current: 1,
            changed_concurrently: 0
        }
    );
    vault(t, copy(&new), vec![])
        .verify_master_key()
        .await
        .expect("finished");
}

/// The webhook signing keys are deployment keys wrapped by the master key: a rotation re-wraps
/// them (and a signing-key rotation's published key), the new master key alone then signs with
/// the same keys, and the old one opens none.
async fn webhook_signing_keys_move_with_the_master_key(t: &TestDatabase) {
    let (old, new) = (MasterKey::generate(), MasterKey::generate());
    let before = vault(t, copy(&old), vec![]);
    before.create_tenant("acme").await.expect("tenant");
    let now = tessera_domain::timestamp::now();
    let (first, _) = before
        .webhook_signing_key_at(now)
        .await
        .expect("a first key");
    let next = before
        .rotate_webhook_signing_key(time::Duration::hours(24))
        .await
        .expect("a published next key");
    assert_eq!((first.version, next.version), (1, 2));
    let (signing, _) = before.webhook_signing_key_at(now).await.expect("key");
    assert_eq!(
        signing.version, 1,
        "the next key signs only after the overlap"
    );
    let later = now + time::Duration::hours(25);
    assert_eq!(
        before
            .webhook_signing_key_at(later)
            .await
            .expect("key")
            .0
            .version,
        2
    );

    vault(t, copy(&new), vec![copy(&old)])
        .rotate_master_key()
        .await
        .expect("rotate");
    let after = vault(t, copy(&new), vec![]);
    for at in [now, later] {
        let (stored, key) = after
            .webhook_signing_key_at(at)
            .await
            .expect("opens under the new key");
        assert_eq!(
            key.public_pem(),
            stored.public_pem,
            "the same key as published"
        );
        assert!(key.sign(b"{}").is_ok());
    }
    let stale = vault(t, copy(&old), vec![]);
    assert!(
        stale.webhook_signing_key_at(now).await.is_err(),
        "the old master key opens no signing key"
    );
}
