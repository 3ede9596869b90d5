//! The storage suite: every test runs against SQLite and (when `TESSERA_TEST_DATABASE_URL` is
//! set) PostgreSQL, through the domain's traits.

use std::collections::BTreeMap;

use tessera_domain::{
    application::{Application, ApplicationKey, ApplicationType},
    store::{
        ApplicationFilter, ApplicationStore, ContainerScope, HealthStore, KeyAdded, StoreError,
        StoredApplication, StoredApplicationKey, StoredTenant, StoredToken, TenantStore,
        TokenFilter, TokenInserts, TokenListing, TokenRecords,
    },
    timestamp, ApiKey, ApiKeyHash, ApplicationId, ApplicationKeyId, Container, MasterKey,
    PageRequest, Permission, Tenant, TenantId, TokenId, TokenType,
};
use tessera_testkit::{backend_tests, db::TestDatabase};
use time::Duration;

backend_tests!(
    ping_answers,
    tenants_round_trip_with_their_admin,
    applications_round_trip_and_list_oldest_first,
    applications_update_rekey_and_delete,
    applications_are_confined_to_their_tenant,
    application_keys_are_added_listed_revoked_and_filtered,
    concurrent_key_additions_stop_at_the_cap,
    tokens_round_trip_exactly,
    token_lists_page_by_creation_then_id,
    token_lists_filter_by_type_metadata_and_id,
    token_lists_respect_container_scope,
    tokens_are_confined_to_their_tenant,
    deleting_a_token_removes_its_metadata,
    duplicate_ids_are_conflicts,
    batch_token_reads_return_each_own_row_once,
);

#[test]
fn postgres_tests_are_enabled_in_ci() {
    if tessera_testkit::db::postgres_required() {
        assert!(
            std::env::var(tessera_testkit::db::PG_URL_VAR).is_ok_and(|v| !v.is_empty()),
            "CI=true requires TESSERA_TEST_DATABASE_URL so the PostgreSQL suite runs"
        );
    }
}

async fn tenant(t: &TestDatabase) -> (TenantId, ApplicationId) {
    let now = timestamp::now();
    let tenant = Tenant {
        id: TenantId::new(),
        name: "acme".into(),
        created_at: now,
    };
    let wrapped = MasterKey::generate()
        .new_wrapped_data_key(tenant.id)
        .expect("wrap");
    let admin = application(
        tenant.id,
        ApplicationType::Management,
        vec![Permission::ProxyRead],
    );
    let admin_id = admin.application.id;
    t.db.insert_tenant_with_admin(
        &StoredTenant {
            tenant: tenant.clone(),
            wrapped_data_key: wrapped,
            wrapped_index_keys: None,
        },
        &admin,
    )
    .await
    .expect("insert tenant");
    (tenant.id, admin_id)
}

fn application(
    tenant_id: TenantId,
    app_type: ApplicationType,
    permissions: Vec<Permission>,
) -> StoredApplication {
    let id = ApplicationId::new();
    let now = timestamp::now();
    StoredApplication {
        application: Application {
            permissions,
            ..Application::new(id, tenant_id, "app", app_type, (id, now))
        },
        key: Some(new_key(tenant_id, id)),
    }
}

/// A fresh key of application `app`.
fn new_key(tenant_id: TenantId, app: ApplicationId) -> StoredApplicationKey {
    StoredApplicationKey {
        tenant_id,
        key: ApplicationKey {
            id: ApplicationKeyId::new(),
            application_id: app,
            created_by: app,
            created_at: timestamp::now(),
        },
        key_hash: ApiKey::generate().hash(),
    }
}

/// The hash of the key `app` was inserted with.
fn hash_of(app: &StoredApplication) -> &ApiKeyHash {
    &app.key.as_ref().expect("inserted with a key").key_hash
}

fn token(
    tenant_id: TenantId,
    by: ApplicationId,
    token_type: TokenType,
    container: &str,
    metadata: &[(&str, &str)],
) -> StoredToken {
    let now = timestamp::now();
    StoredToken {
        id: TokenId::new(),
        tenant_id,
        token_type,
        container: Container::parse(container).expect("container"),
        metadata: metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ciphertext: vec![1, 2, 3, 0, 255],
        created_by: by,
        created_at: now,
        modified_by: by,
        modified_at: now,
        fingerprint: format!("fp-{container}"),
        expires_at: None,
        destinations: None,
        search_indexes: None,
        fingerprint_expression: None,
        search_hashes: Vec::new(),
        holds_cvc: false,
        mask: None,
    }
}

/// A `token` token in `/general/high/` with `metadata`.
fn plain_token(tenant_id: TenantId, by: ApplicationId, metadata: &[(&str, &str)]) -> StoredToken {
    token(tenant_id, by, TokenType::Token, "/general/high/", metadata)
}

fn page(page: i64, size: i64) -> PageRequest {
    PageRequest::new(Some(page), Some(size)).expect("page")
}

/// How many of `tenant`'s tokens `filter` finds within `scope`.
async fn count(
    t: &TestDatabase,
    tenant: TenantId,
    filter: &TokenFilter,
    scope: &ContainerScope,
) -> u64 {
    t.db.list_tokens(tenant, filter, scope, page(1, 100))
        .await
        .expect("list")
        .total_items
}

async fn ping_answers(t: &TestDatabase) {
    t.db.ping().await.expect("ping");
}

async fn tenants_round_trip_with_their_admin(t: &TestDatabase) {
    assert!(t.db.first_tenant().await.expect("first").is_none());
    let (tenant_id, admin_id) = tenant(t).await;
    let stored =
        t.db.get_tenant(tenant_id)
            .await
            .expect("get")
            .expect("present");
    assert_eq!(stored.tenant.name, "acme");
    assert!(!stored.wrapped_data_key.is_empty());
    assert_eq!(
        t.db.first_tenant()
            .await
            .expect("first")
            .expect("some")
            .tenant
            .id,
        tenant_id
    );
    assert!(t
        .db
        .get_application(tenant_id, admin_id)
        .await
        .expect("admin")
        .is_some());
    assert!(t
        .db
        .get_tenant(TenantId::new())
        .await
        .expect("get")
        .is_none());
}

/// A private application reading tokens, allowed `token:use` under `/pci/` by a rule.
fn pci_reader(tenant_id: TenantId) -> StoredApplication {
    let mut app = application(
        tenant_id,
        ApplicationType::Private,
        vec![Permission::TokenRead],
    );
    app.application.rules = vec![tessera_domain::Rule {
        description: Some("pci".into()),
        priority: 1,
        container: Container::parse("/pci/").expect("c"),
        permissions: vec![Permission::TokenUse],
        transform: Default::default(),
    }];
    app
}

async fn applications_round_trip_and_list_oldest_first(t: &TestDatabase) {
    let (tenant_id, admin_id) = tenant(t).await;
    let app = pci_reader(tenant_id);
    t.db.insert_application(&app).await.expect("insert");
    let found =
        t.db.find_application_by_key_hash(hash_of(&app))
            .await
            .expect("find")
            .expect("some");
    assert_eq!(
        found.application, app.application,
        "round trip is exact, timestamps included"
    );
    assert!(found.key.key_hash.verify(hash_of(&app)));
    assert_eq!(Some(&found.key.key), app.key.as_ref().map(|k| &k.key));

    let list =
        t.db.list_applications(tenant_id, &ApplicationFilter::default(), page(1, 1))
            .await
            .expect("list");
    assert_eq!(
        (list.total_items, list.items.len(), list.total_pages()),
        (2, 1, 2)
    );
    assert_eq!(list.items[0].id, admin_id, "oldest first");
    let second =
        t.db.list_applications(tenant_id, &ApplicationFilter::default(), page(2, 1))
            .await
            .expect("list");
    assert_eq!(second.items[0].id, app.application.id);
}

async fn applications_update_rekey_and_delete(t: &TestDatabase) {
    let (tenant_id, admin_id) = tenant(t).await;
    let app = pci_reader(tenant_id);
    t.db.insert_application(&app).await.expect("insert");
    let mut changed = app.application.clone();
    changed.name = "renamed".into();
    changed.permissions = vec![Permission::TokenCreate];
    changed.modified_at = timestamp::now() + Duration::seconds(1);
    assert!(t.db.update_application(&changed).await.expect("update"));
    assert_eq!(
        t.db.get_application(tenant_id, changed.id)
            .await
            .expect("get"),
        Some(changed.clone())
    );

    let second = new_key(tenant_id, changed.id);
    assert_eq!(
        t.db.insert_application_key(&second, 100)
            .await
            .expect("second key"),
        KeyAdded::Added
    );
    let replacement = new_key(tenant_id, changed.id);
    let new_hash = replacement.key_hash.clone();
    assert!(t
        .db
        .replace_application_keys(&replacement, admin_id, timestamp::now())
        .await
        .expect("replace"));
    let by_key = |hash| t.db.find_application_by_key_hash(hash);
    let old = by_key(hash_of(&app)).await.expect("old");
    assert!(old.is_none(), "old key is gone");
    let old = by_key(&second.key_hash).await.expect("second");
    assert!(old.is_none(), "old key is gone");
    assert!(by_key(&new_hash).await.expect("new").is_some());

    let delete = || t.db.delete_application(tenant_id, changed.id);
    assert!(delete().await.expect("delete"));
    assert!(!delete().await.expect("again"));
    assert!(by_key(&new_hash).await.expect("gone").is_none());
}

async fn applications_are_confined_to_their_tenant(t: &TestDatabase) {
    let (a, _) = tenant(t).await;
    let (b, _) = tenant(t).await;
    let app = application(a, ApplicationType::Private, vec![Permission::TokenRead]);
    t.db.insert_application(&app).await.expect("insert");
    let id = app.application.id;
    assert!(t.db.get_application(b, id).await.expect("get").is_none());
    let mut moved = app.application.clone();
    moved.tenant_id = b;
    assert!(!t.db.update_application(&moved).await.expect("update"));
    assert!(!t
        .db
        .replace_application_keys(&new_key(b, id), id, timestamp::now())
        .await
        .expect("key"));
    assert_eq!(
        t.db.insert_application_key(&new_key(b, id), 100)
            .await
            .expect("insert"),
        KeyAdded::NoApplication,
        "no key for an application of another tenant"
    );
    let own = app.key.as_ref().expect("key").key.id;
    assert!(!t
        .db
        .delete_application_key(b, id, own)
        .await
        .expect("revoke"));
    assert!(t
        .db
        .list_application_keys(b, &[id])
        .await
        .expect("keys")
        .is_empty());
    assert!(!t.db.delete_application(b, id).await.expect("delete"));
    assert_eq!(
        t.db.list_applications(b, &ApplicationFilter::default(), page(1, 100))
            .await
            .expect("list")
            .total_items,
        1,
        "only b's admin"
    );
    assert!(t
        .db
        .get_application(a, id)
        .await
        .expect("still there")
        .is_some());
}

async fn tokens_round_trip_exactly(t: &TestDatabase) {
    let (tenant_id, by) = tenant(t).await;
    let tok = token(
        tenant_id,
        by,
        TokenType::Card,
        "/pci/high/",
        &[("k", "v"), ("ü", "ß")],
    );
    t.db.insert_token(&tok).await.expect("insert");
    let got =
        t.db.get_token(tenant_id, tok.id)
            .await
            .expect("get")
            .expect("present");
    assert_eq!(got.ciphertext, tok.ciphertext);
    assert_eq!(got.metadata, tok.metadata);
    assert_eq!(
        (got.created_at, got.modified_at),
        (tok.created_at, tok.modified_at)
    );
    assert_eq!(
        (got.token_type, got.container.as_str()),
        (TokenType::Card, "/pci/high/")
    );
}

/// 25 tokens of a new tenant in runs of three sharing a `created_at`: every fifth a card,
/// `colour` red or blue by parity, `size` big for multiples of three. The tenant, and the
/// tokens' (created_at, id) in list order.
async fn twenty_five_tokens(t: &TestDatabase) -> (TenantId, Vec<(time::OffsetDateTime, TokenId)>) {
    let (tenant_id, by) = tenant(t).await;
    let mut ids = vec![];
    for i in 0..25 {
        let kind = if i % 5 == 0 {
            TokenType::Card
        } else {
            TokenType::Token
        };
        let colour = if i % 2 == 0 { "red" } else { "blue" };
        let size = if i % 3 == 0 { "big" } else { "small" };
        let mut tok = token(
            tenant_id,
            by,
            kind,
            "/general/high/",
            &[("colour", colour), ("size", size)],
        );
        // Same created_at for a run of tokens: the id breaks the tie.
        tok.created_at = timestamp::now() - Duration::minutes(60 - i64::from(i / 3));
        t.db.insert_token(&tok).await.expect("insert");
        ids.push((tok.created_at, tok.id));
    }
    ids.sort();
    (tenant_id, ids)
}

async fn token_lists_page_by_creation_then_id(t: &TestDatabase) {
    let (tenant_id, ids) = twenty_five_tokens(t).await;
    let all = TokenFilter::default();
    let mut seen = vec![];
    for p in 1..=3 {
        let got =
            t.db.list_tokens(tenant_id, &all, &ContainerScope::All, page(p, 10))
                .await
                .expect("page");
        assert_eq!((got.total_items, got.total_pages()), (25, 3));
        seen.extend(got.items.iter().map(|t| (t.created_at, t.id.clone())));
    }
    assert_eq!(
        seen, ids,
        "pages follow created_at then id, no duplicates, no misses"
    );
    let past =
        t.db.list_tokens(tenant_id, &all, &ContainerScope::All, page(4, 10))
            .await
            .expect("past");
    assert!(past.items.is_empty());
    assert_eq!(past.total_items, 25);
}

async fn token_lists_filter_by_type_metadata_and_id(t: &TestDatabase) {
    let (tenant_id, ids) = twenty_five_tokens(t).await;
    let cards = TokenFilter {
        types: vec![TokenType::Card],
        ..Default::default()
    };
    let red_big = TokenFilter {
        metadata: vec![
            ("colour".into(), "red".into()),
            ("size".into(), "big".into()),
        ],
        ..Default::default()
    };
    let red_big_cards = TokenFilter {
        types: vec![TokenType::Card],
        ..red_big.clone()
    };
    let no_match = TokenFilter {
        metadata: vec![("colour".into(), "RED".into())],
        ..Default::default()
    };
    for (filter, found, what) in [
        (cards, 5, "cards"),
        // i even and i % 3 == 0: 0, 6, 12, 18, 24.
        (red_big, 5, "metadata pairs"),
        // ... and i % 5 == 0: 0.
        (red_big_cards, 1, "type and metadata"),
        (no_match, 0, "metadata values match exactly"),
    ] {
        let total = count(t, tenant_id, &filter, &ContainerScope::All).await;
        assert_eq!(total, found, "{what}");
    }
    let by_id = TokenFilter {
        ids: vec![ids[3].1.clone(), ids[7].1.clone(), TokenId::new()],
        ..Default::default()
    };
    let got =
        t.db.list_tokens(tenant_id, &by_id, &ContainerScope::All, page(1, 100))
            .await
            .expect("ids");
    assert_eq!(
        got.items.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        vec![ids[3].1.clone(), ids[7].1.clone()]
    );
}

async fn token_lists_respect_container_scope(t: &TestDatabase) {
    let (tenant_id, by) = tenant(t).await;
    for c in ["/pci/high/", "/pci/high/", "/bank/high/", "/general/high/"] {
        t.db.insert_token(&token(tenant_id, by, TokenType::Token, c, &[]))
            .await
            .expect("insert");
    }
    let mut containers =
        t.db.token_containers(tenant_id, &TokenFilter::default())
            .await
            .expect("containers");
    containers.sort();
    assert_eq!(
        containers.iter().map(Container::as_str).collect::<Vec<_>>(),
        vec!["/bank/high/", "/general/high/", "/pci/high/"]
    );
    let pci = ContainerScope::Only(vec![Container::parse("/pci/high/").expect("c")]);
    let got =
        t.db.list_tokens(tenant_id, &TokenFilter::default(), &pci, page(1, 100))
            .await
            .expect("scoped");
    assert_eq!(
        got.total_items, 2,
        "tokens outside the scope are neither listed nor counted"
    );
    let none = ContainerScope::Only(vec![]);
    assert_eq!(count(t, tenant_id, &TokenFilter::default(), &none).await, 0);
}

async fn tokens_are_confined_to_their_tenant(t: &TestDatabase) {
    let (a, by) = tenant(t).await;
    let (b, _) = tenant(t).await;
    let tok = plain_token(a, by, &[("k", "v")]);
    t.db.insert_token(&tok).await.expect("insert");
    assert!(t
        .db
        .get_token(b, tok.id.clone())
        .await
        .expect("get")
        .is_none());
    assert!(!t.db.delete_token(b, tok.id.clone()).await.expect("delete"));
    let filter = TokenFilter {
        ids: vec![tok.id.clone()],
        ..Default::default()
    };
    assert_eq!(count(t, b, &filter, &ContainerScope::All).await, 0);
    assert!(t
        .db
        .token_containers(b, &TokenFilter::default())
        .await
        .expect("containers")
        .is_empty());
    assert!(t
        .db
        .get_token(a, tok.id)
        .await
        .expect("still there")
        .is_some());
}

async fn deleting_a_token_removes_its_metadata(t: &TestDatabase) {
    let (tenant_id, by) = tenant(t).await;
    let tok = plain_token(tenant_id, by, &[("k", "v")]);
    t.db.insert_token(&tok).await.expect("insert");
    assert!(t
        .db
        .delete_token(tenant_id, tok.id.clone())
        .await
        .expect("delete"));
    assert!(t
        .db
        .get_token(tenant_id, tok.id.clone())
        .await
        .expect("get")
        .is_none());
    // Re-inserting the same id with the same metadata key would conflict if the pair survived.
    t.db.insert_token(&tok)
        .await
        .expect("metadata rows went with the token");
    assert!(!t
        .db
        .delete_token(tenant_id, TokenId::new())
        .await
        .expect("absent"));
}

async fn duplicate_ids_are_conflicts(t: &TestDatabase) {
    let (tenant_id, by) = tenant(t).await;
    let tok = plain_token(tenant_id, by, &[("a", "1"), ("b", "2")]);
    t.db.insert_token(&tok).await.expect("insert");
    let mut again = tok.clone();
    again.metadata.clear();
    assert!(matches!(
        t.db.insert_token(&again).await,
        Err(StoreError::Conflict(_))
    ));
    // A failed multi-row write leaves nothing behind: the token keeps its two pairs only.
    let filter = TokenFilter {
        metadata: vec![("a".into(), "1".into())],
        ..Default::default()
    };
    assert_eq!(count(t, tenant_id, &filter, &ContainerScope::All).await, 1);
    let app = application(
        tenant_id,
        ApplicationType::Private,
        vec![Permission::TokenRead],
    );
    t.db.insert_application(&app).await.expect("insert");
    let mut clash = application(
        tenant_id,
        ApplicationType::Private,
        vec![Permission::TokenRead],
    );
    if let Some(key) = clash.key.as_mut() {
        key.key_hash = hash_of(&app).clone();
    }
    assert!(matches!(
        t.db.insert_application(&clash).await,
        Err(StoreError::Conflict(_))
    ));
}

/// `get_tokens` (one cached point read per id on SQLite, pipelined primary-key probes on
/// PostgreSQL) returns exactly the caller's tenant's rows among the ids, each once, whatever
/// the order, duplicates or unknown ids.
async fn batch_token_reads_return_each_own_row_once(t: &TestDatabase) {
    let (a, by_a) = tenant(t).await;
    let (b, by_b) = tenant(t).await;
    let mine: Vec<StoredToken> = (0..3)
        .map(|_| plain_token(a, by_a, &[("k", "v")]))
        .collect();
    let theirs = plain_token(b, by_b, &[]);
    for tok in mine.iter().chain([&theirs]) {
        t.db.insert_token(tok).await.expect("insert");
    }
    let ids = [
        mine[2].id.clone(),
        theirs.id,
        TokenId::new(),
        mine[0].id.clone(),
        mine[2].id.clone(),
    ];
    let mut got: Vec<TokenId> =
        t.db.get_tokens(a, &ids)
            .await
            .expect("read")
            .into_iter()
            .map(|row| row.id)
            .collect();
    got.sort();
    let mut want = vec![mine[0].id.clone(), mine[2].id.clone()];
    want.sort();
    assert_eq!(got, want, "only tenant a's rows among the ids");
    let full =
        t.db.get_tokens(a, &[mine[1].id.clone()])
            .await
            .expect("read");
    assert_eq!(full.len(), 1);
    assert_eq!(
        (
            &full[0].id,
            &full[0].ciphertext,
            &full[0].metadata,
            &full[0].container
        ),
        (
            &mine[1].id,
            &mine[1].ciphertext,
            &mine[1].metadata,
            &mine[1].container
        ),
        "the row comes back exactly"
    );
    assert!(t
        .db
        .get_tokens(b, &[mine[0].id.clone()])
        .await
        .expect("read")
        .is_empty());
    assert!(t.db.get_tokens(a, &[]).await.expect("read").is_empty());
}

async fn application_keys_are_added_listed_revoked_and_filtered(t: &TestDatabase) {
    let (tenant_id, admin_id) = tenant(t).await;
    let mut keyless = application(
        tenant_id,
        ApplicationType::Public,
        vec![Permission::TokenCreate],
    );
    keyless.key = None;
    keyless.application.expires_at = Some(timestamp::now() + Duration::days(1));
    t.db.insert_application(&keyless).await.expect("insert");
    let id = keyless.application.id;
    let read = t.db.get_application(tenant_id, id).await.expect("get");
    assert_eq!(
        read.as_ref(),
        Some(&keyless.application),
        "expiry round trips"
    );
    let keys = |apps: Vec<ApplicationId>| async move {
        t.db.list_application_keys(tenant_id, &apps)
            .await
            .expect("keys")
    };
    assert!(keys(vec![id]).await.is_empty());

    let (first, second) = (new_key(tenant_id, id), new_key(tenant_id, id));
    keys_are_added_up_to_the_cap_and_found(t, tenant_id, (id, admin_id), [&first, &second]).await;
    a_key_is_revoked_once_and_only_by_its_application(
        t,
        tenant_id,
        (id, admin_id),
        [&first, &second],
    )
    .await;
    applications_are_filtered_by_id_and_type(t, tenant_id, (id, admin_id)).await;
    assert!(t
        .db
        .delete_application(tenant_id, id)
        .await
        .expect("delete"));
    assert!(
        keys(vec![id]).await.is_empty(),
        "keys go with their application"
    );
    assert!(t
        .db
        .find_application_by_key_hash(&second.key_hash)
        .await
        .expect("gone")
        .is_none());
}

/// Two keys added to `app` (a third finds the cap of two), listed beside `admin`'s, and
/// found by their hash.
async fn keys_are_added_up_to_the_cap_and_found(
    t: &TestDatabase,
    tenant_id: TenantId,
    (id, admin_id): (ApplicationId, ApplicationId),
    [first, second]: [&StoredApplicationKey; 2],
) {
    let keys = |apps: Vec<ApplicationId>| async move {
        t.db.list_application_keys(tenant_id, &apps)
            .await
            .expect("keys")
    };
    for k in [first, second] {
        let added = t.db.insert_application_key(k, 2).await.expect("add");
        assert_eq!(added, KeyAdded::Added);
    }
    let third = new_key(tenant_id, id);
    let full = t.db.insert_application_key(&third, 2).await.expect("add");
    assert_eq!(full, KeyAdded::Full, "two is the most this call allows");
    let listed = keys(vec![id, admin_id]).await;
    assert_eq!(listed.len(), 3, "both keys, and the admin's");
    assert_eq!(
        keys(vec![id]).await,
        vec![first.key.clone(), second.key.clone()]
    );
    let found =
        t.db.find_application_by_key_hash(&second.key_hash)
            .await
            .expect("find");
    assert_eq!(found.map(|f| f.key.key.id), Some(second.key.id));
}

/// `first` revoked once (again: `false`), never through another application, and no longer
/// found.
async fn a_key_is_revoked_once_and_only_by_its_application(
    t: &TestDatabase,
    tenant_id: TenantId,
    (id, admin_id): (ApplicationId, ApplicationId),
    [first, second]: [&StoredApplicationKey; 2],
) {
    assert!(t
        .db
        .delete_application_key(tenant_id, id, first.key.id)
        .await
        .expect("revoke"));
    assert!(!t
        .db
        .delete_application_key(tenant_id, id, first.key.id)
        .await
        .expect("again"));
    assert!(!t
        .db
        .delete_application_key(tenant_id, admin_id, second.key.id)
        .await
        .expect("other app"));
    assert!(t
        .db
        .find_application_by_key_hash(&first.key_hash)
        .await
        .expect("gone")
        .is_none());
}

/// The list's filters: by id, by type, both, and an unknown id.
async fn applications_are_filtered_by_id_and_type(
    t: &TestDatabase,
    tenant_id: TenantId,
    (id, admin_id): (ApplicationId, ApplicationId),
) {
    let filter =
        |ids: Vec<ApplicationId>, types: Vec<ApplicationType>| ApplicationFilter { ids, types };
    let total = |f: ApplicationFilter| async move {
        t.db.list_applications(tenant_id, &f, page(1, 100))
            .await
            .expect("list")
            .total_items
    };
    assert_eq!(total(filter(vec![id], vec![])).await, 1);
    assert_eq!(
        total(filter(vec![], vec![ApplicationType::Management])).await,
        1
    );
    assert_eq!(
        total(filter(vec![id, admin_id], vec![ApplicationType::Public])).await,
        1
    );
    assert_eq!(total(filter(vec![ApplicationId::new()], vec![])).await, 0);
}

/// Twelve additions at once to an application holding 96 keys (cap 100): four are added,
/// eight find it full, and 100 keys are left: the count and the insert are one step.
async fn concurrent_key_additions_stop_at_the_cap(t: &TestDatabase) {
    let (tenant_id, _) = tenant(t).await;
    let app = application(
        tenant_id,
        ApplicationType::Private,
        vec![Permission::TokenRead],
    );
    t.db.insert_application(&app).await.expect("insert");
    let id = app.application.id;
    for _ in 0..95 {
        let added =
            t.db.insert_application_key(&new_key(tenant_id, id), 100)
                .await;
        assert_eq!(added.expect("add"), KeyAdded::Added);
    }
    // Every pooled connection open first, so that the additions really run side by side.
    let ids = [id];
    let warm = (0..8).map(|_| t.db.list_application_keys(tenant_id, &ids));
    for listed in futures_util::future::join_all(warm).await {
        assert_eq!(listed.expect("keys").len(), 96);
    }
    let keys: Vec<_> = (0..12).map(|_| new_key(tenant_id, id)).collect();
    let racing = keys.iter().map(|k| t.db.insert_application_key(k, 100));
    let outcomes: Vec<KeyAdded> = futures_util::future::join_all(racing)
        .await
        .into_iter()
        .map(|r| r.expect("insert"))
        .collect();
    let added = outcomes.iter().filter(|o| **o == KeyAdded::Added).count();
    assert_eq!(added, 4, "{outcomes:?}");
    let held =
        t.db.list_application_keys(tenant_id, &[id])
            .await
            .expect("keys");
    assert_eq!(held.len(), 100);
}
