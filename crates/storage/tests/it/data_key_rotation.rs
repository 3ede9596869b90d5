//! Data-key rotation through the vault, on both backends (docs/operations.md, "Rotating data
//! keys"): under concurrent creates and reads, a new version seals from then on and the job
//! re-encrypts every token (data and mask), proxy and console session; no read fails or reads
//! a wrong value; `status` reaches 0 rows on the old version; `retire` is refused while a row
//! uses it and works after; the retired key opens nothing the database holds then; a second
//! runner is refused while the lease is held, and a job whose runner stopped resumes where it
//! was.

use std::{sync::Arc, time::Duration};

use serde_json::json;
use tessera_domain::{
    audit::{AuditAction, Durability},
    crypto::{key_version, CryptoError},
    store::{DataKeyStore, SealedTable, TenantStore},
    vault::{SessionLimits, SessionLookup},
    JobSettings, MasterKey, NewToken, Principal, TenantId, TokenId, Vault, VaultError,
};
use tessera_storage::DetachedStore;
use tessera_testkit::{backend_tests, db::TestDatabase, vault::tenant_admin};

backend_tests!(
    rotation_reencrypts_every_row_under_load,
    retire_is_refused_while_a_row_uses_the_version,
    a_stopped_job_resumes_and_a_second_runner_waits
);

fn vault(t: &TestDatabase) -> Vault {
    let store = Arc::new(DetachedStore::new(t.db.clone()));
    let (log, writer) = tessera_audit::start(store.clone(), Durability::Sync, None);
    writer.spawn().expect("audit writer");
    Vault::with_master_keys(
        store,
        tessera_testkit::master_key(),
        Vec::<MasterKey>::new(),
    )
    .with_audit(log)
}

fn settings(rows_per_second: u32, lease: Duration) -> JobSettings {
    JobSettings {
        owner: uuid::Uuid::new_v4().to_string(),
        rows_per_second,
        lease,
    }
}

/// A card `n` with a mask of its own, and its data.
fn card_input(n: usize) -> (NewToken, serde_json::Value) {
    let data = json!({"number": "4242424242424242", "expiration_month": 1 + n % 12, "expiration_year": 2030});
    let input: NewToken = serde_json::from_value(json!({
        "type": "card", "data": data, "mask": {"number": "{{ data.number | reveal_last: 4 }}"}
    }))
    .expect("input");
    (input, data)
}

async fn card(v: &Vault, admin: &Principal, n: usize) -> (TokenId, serde_json::Value) {
    let (input, data) = card_input(n);
    let token = v.create_token(admin, input).await.expect("token");
    (token.id, data)
}

async fn rotation_reencrypts_every_row_under_load(t: &TestDatabase) {
    let v = Arc::new(vault(t));
    let created = v.create_tenant("acme").await.expect("tenant");
    let admin = v
        .authenticate(Some(created.api_key.expose()))
        .await
        .expect("admin");
    let tenant = admin.tenant_id();
    let mut cards = Vec::new();
    for n in 0..120 {
        cards.push(card(&v, &admin, n).await);
    }
    let proxy = v
        .create_proxy(
            &admin,
            serde_json::from_value(
                json!({"name": "p", "destination_url": "https://api.example.com",
                "configuration": {"SECRET": "s3"},
                "request_transform": {"code": "module.exports = async (req) => req.args;"}}),
            )
            .expect("proxy input"),
        )
        .await
        .expect("proxy");
    let (session, _) = v
        .open_console_session(created.api_key.expose())
        .await
        .expect("session");
    let first = first_key(t, tenant).await;

    // Load: readers check every card's value; a writer creates and reads back.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cards = Arc::new(cards);
    let mut load = Vec::new();
    for reader in 0..3 {
        let (v, admin, cards, stop) = (v.clone(), admin.clone(), cards.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let mut reads = 0u64;
            let mut n = reader;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (id, data) = &cards[n % cards.len()];
                let read = v
                    .get_token(&admin, id.clone())
                    .await
                    .expect("a read during rotation");
                assert_eq!(read.data.expose(), data, "a wrong value during rotation");
                reads += 1;
                n += 7;
            }
            reads
        }));
    }
    // The writer runs beside the job in this task (a create's future is not `Send`).
    let writer = async {
        let mut n = 1000;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let (input, data) = card_input(n);
            let id = v.create_token(&admin, input).await.expect("a create").id;
            let read = v.get_token(&admin, id).await.expect("a new token's read");
            assert_eq!(read.data.expose(), &data);
            n += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        n - 1000
    };
    let rotation = async {
        let job = v.rotate_data_key(tenant).await.expect("rotate");
        assert_eq!(job.target_version, 2);
        let done = v
            .run_data_key_job(tenant, &settings(2000, Duration::from_secs(10)))
            .await
            .expect("job");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        done
    };
    let (written, done) = tokio::join!(writer, rotation);
    assert!(written > 0, "the writer ran");
    assert!(done.finished_at.is_some() && done.rows_done > 0, "{done:?}");
    for task in load {
        assert!(task.await.expect("load task") > 0, "the load ran");
    }

    let status = v.data_key_status(tenant).await.expect("status");
    assert_eq!(status.current_version, 2);
    assert_eq!(status.versions.first(), Some(&(1, 0)), "{status:?}");
    assert_eq!(v.retire_data_key(tenant, Some(1)).await.expect("retire"), 1);
    let status = v.data_key_status(tenant).await.expect("status");
    assert_eq!(status.versions.len(), 1, "{status:?}");

    // What the database holds now: every sealed value under version 2, none of which the
    // retired key opens.
    for table in SealedTable::ALL {
        for row in
            t.db.sealed_rows(tenant, table, "", 10_000)
                .await
                .expect("rows")
        {
            for value in row.values.iter().flatten() {
                assert_eq!(key_version(value), Some(2), "{table:?} {}", row.key);
                if table == SealedTable::Tokens && row.values.first() == Some(&Some(value.clone()))
                {
                    let id: TokenId = row.key.parse().expect("id");
                    assert_eq!(
                        first.open_token(tenant, &id, b"", value).err(),
                        Some(CryptoError::UnknownKeyVersion(2))
                    );
                }
            }
        }
    }
    // A process that never held version 1 reads everything.
    let fresh = vault(t);
    for (id, data) in cards.iter() {
        let read = fresh
            .get_token(&admin, id.clone())
            .await
            .expect("read after retire");
        assert_eq!(read.data.expose(), data);
    }
    let read = fresh
        .get_proxy(&admin, proxy.id)
        .await
        .expect("proxy after retire");
    assert_eq!(
        read.configuration.map(|c| c.expose().clone()),
        proxy.configuration.map(|c| c.expose().clone())
    );
    let limits = SessionLimits {
        idle: Duration::from_secs(3600),
        max_age: Duration::from_secs(8 * 3600),
    };
    assert!(matches!(
        fresh
            .console_session(session.expose(), limits)
            .await
            .expect("session"),
        SessionLookup::Live(_)
    ));

    v.audit().flush().await;
    let actions: Vec<AuditAction> = t
        .audit_chain(Some(tenant))
        .await
        .iter()
        .map(|e| e.event.action)
        .filter(|a| a.as_str().starts_with("tenant.data_key"))
        .collect();
    assert_eq!(
        actions,
        [
            AuditAction::DataKeyRotated,
            AuditAction::DataKeyProgress,
            AuditAction::DataKeyProgress,
            AuditAction::DataKeyProgress,
            AuditAction::DataKeyReencrypted,
            AuditAction::DataKeyRetired,
        ]
    );
}

/// The tenant's first data key, unwrapped by the master key: what a copy of the retired key
/// would be.
async fn first_key(t: &TestDatabase, tenant: TenantId) -> tessera_domain::crypto::DataKey {
    let stored =
        t.db.get_tenant(tenant)
            .await
            .expect("read")
            .expect("tenant");
    tessera_testkit::master_key()
        .unwrap_data_key(tenant, &stored.wrapped_data_key)
        .expect("first key")
}

async fn retire_is_refused_while_a_row_uses_the_version(t: &TestDatabase) {
    let v = vault(t);
    let admin = tenant_admin(&v, "acme").await;
    let tenant = admin.tenant_id();
    card(&v, &admin, 1).await;
    v.rotate_data_key(tenant).await.expect("rotate");
    for (version, says) in [
        (Some(1), "1 rows still use version 1"),
        (Some(2), "current"),
        (Some(7), "not held"),
    ] {
        match v.retire_data_key(tenant, version).await {
            Err(VaultError::Conflict(message)) => assert!(message.contains(says), "{message}"),
            other => panic!("{other:?}"),
        }
    }
    // A second rotation while the first job is unfinished resumes it instead.
    let again = v.rotate_data_key(tenant).await.expect("rotate again");
    assert_eq!(again.target_version, 2);
    v.run_data_key_job(tenant, &settings(1000, Duration::from_secs(5)))
        .await
        .expect("job");
    assert_eq!(v.retire_data_key(tenant, None).await.expect("retire"), 1);
    assert!(matches!(
        v.retire_data_key(TenantId::new(), None).await,
        Err(VaultError::NotFound(_))
    ));
}

async fn a_stopped_job_resumes_and_a_second_runner_waits(t: &TestDatabase) {
    let v = Arc::new(vault(t));
    let admin = tenant_admin(&v, "acme").await;
    let tenant = admin.tenant_id();
    for n in 0..60 {
        card(&v, &admin, n).await;
    }
    v.rotate_data_key(tenant).await.expect("rotate");
    // A runner at 10 rows a second, stopped part-way (as kill -9 would: its lease stays).
    let stopped = settings(10, Duration::from_secs(2));
    let runner = {
        let (v, stopped) = (v.clone(), stopped.clone());
        tokio::spawn(async move { v.run_data_key_job(tenant, &stopped).await })
    };
    let progressed = loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let job =
            t.db.data_key_job(tenant)
                .await
                .expect("job")
                .expect("a job");
        if job.rows_done >= 10 {
            break job;
        }
    };
    runner.abort();
    assert!(progressed.finished_at.is_none());
    // Another runner waits for the lease to run out, then goes on from the saved place.
    let done = v
        .run_data_key_job(tenant, &settings(1000, Duration::from_secs(2)))
        .await
        .expect("resumed");
    assert!(
        done.rows_done >= 60 && done.finished_at.is_some(),
        "{done:?}"
    );
    let status = v.data_key_status(tenant).await.expect("status");
    assert_eq!(status.versions, vec![(1, 0), (2, 60)]);
}
