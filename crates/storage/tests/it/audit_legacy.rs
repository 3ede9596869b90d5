//! The per-event rows of the first audit release move into blocks on both backends.
//! An untouched trail verifies and lists as before; a row edited before the move is still
//! named by verification after it.

use tessera_audit::{encode, link_hash, GENESIS};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent, AuditFilter},
    ApplicationId, PageRequest, TenantId,
};
use tessera_testkit::db::{postgres_required, TestDatabase, PG_URL_VAR};
use uuid::Uuid;

/// The last migration before blocks.
const BEFORE_BLOCKS: &str = "2026-11-25-000007";

mod sqlite {
    #[tokio::test]
    async fn legacy_rows_move_into_blocks_and_stay_verifiable() {
        let db = super::TestDatabase::sqlite_through(Some(super::BEFORE_BLOCKS)).await;
        super::check_move(db).await;
    }
}

mod postgres {
    #[tokio::test]
    async fn legacy_rows_move_into_blocks_and_stay_verifiable() {
        match super::TestDatabase::postgres_through(Some(super::BEFORE_BLOCKS)).await {
            Some(db) => super::check_move(db).await,
            None if super::postgres_required() => {
                panic!("CI=true but {} is unset", super::PG_URL_VAR)
            }
            None => eprintln!("skipped: set {} to run PostgreSQL tests", super::PG_URL_VAR),
        }
    }
}

/// Writes `n` events of `tenant` as the first release did: one row each, hashed over the
/// canonical encoding, and the chain's head. Returns the events' ids.
async fn write_legacy(db: &TestDatabase, tenant: TenantId, n: usize) -> Vec<Uuid> {
    let app = ApplicationId::new();
    let mut prev = GENESIS;
    let mut ids = Vec::new();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let blob = |b: &[u8]| match db.db.backend() {
        tessera_storage::Backend::Sqlite => format!("X'{}'", hex(b)),
        tessera_storage::Backend::Postgres => format!("'\\x{}'::bytea", hex(b)),
    };
    for seq in 1..=n as i64 {
        let mut event = AuditEvent::success(
            tenant,
            AuditAction::TokenCreated,
            Actor::Application(app),
            vec![Uuid::new_v4().into()],
        )
        .with_request_id(&format!("req-{seq}"));
        if seq == 2 {
            event = AuditEvent::denied(
                Some(tenant),
                AuditAction::TokenRead,
                Actor::Anonymous,
                vec![],
                "it's \"quoted\"",
            );
        }
        let hash = link_hash(&prev, &encode(seq, &event));
        let ids_json = serde_json::to_string(
            &event
                .resource_ids
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
        )
        .expect("json");
        let text = |v: Option<&str>| {
            v.map_or("NULL".to_string(), |s| {
                format!("'{}'", s.replace('\'', "''"))
            })
        };
        db.execute(&format!(
            "INSERT INTO audit_events (tenant_id, seq, event_id, occurred_at, action, outcome, actor, resource_ids, proxy_id, request_id, reason, prev_hash, hash) \
             VALUES ('{tenant}', {seq}, '{}', '{}', '{}', '{}', '{}', '{ids_json}', NULL, {}, {}, {}, {})",
            event.id,
            tessera_domain::timestamp::format(event.occurred_at).replace('T', " ").trim_end_matches("+00:00"),
            event.action.as_str(),
            event.outcome.as_str(),
            event.actor.to_wire(),
            text(event.request_id.as_deref()),
            text(event.reason.as_deref()),
            blob(&prev),
            blob(&hash),
        ))
        .await;
        prev = hash;
        ids.push(event.id);
    }
    db.execute(&format!(
        "INSERT INTO audit_chains (tenant_id, last_seq, last_hash, last_event_id, pruned_seq, pruned_hash) \
         VALUES ('{tenant}', {n}, {}, '{}', 0, {})",
        blob(&prev),
        ids[n - 1],
        blob(&GENESIS),
    ))
    .await;
    ids
}

async fn check_move(db: TestDatabase) {
    let (kept, edited) = (TenantId::new(), TenantId::new());
    let kept_ids = write_legacy(&db, kept, 5).await;
    let edited_ids = write_legacy(&db, edited, 3).await;
    // Someone edits a row before the upgrade: the request id of the third event.
    db.execute(&format!(
        "UPDATE audit_events SET request_id = 'forged' WHERE event_id = '{}'",
        edited_ids[2]
    ))
    .await;
    db.db.migrate().await.expect("migrate");
    assert_eq!(db.db.move_legacy_audit_events().await.expect("move"), 8);
    assert_eq!(db.db.move_legacy_audit_events().await.expect("again"), 0);

    let report = tessera_audit::verify(&db.db, Some(kept))
        .await
        .expect("verify");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.events_checked, 5);
    let page = PageRequest::new(Some(1), Some(10)).expect("page");
    let listed = tessera_audit::list(&db.db, kept, &AuditFilter::default(), page)
        .await
        .expect("list");
    let ids: Vec<Uuid> = listed.items.iter().rev().map(|e| e.event.id).collect();
    assert_eq!(ids, kept_ids);
    assert_eq!(
        listed.items[3].event.reason.as_deref(),
        Some("it's \"quoted\"")
    );
    let broken = tessera_audit::verify(&db.db, Some(edited))
        .await
        .expect("verify")
        .broken
        .expect("the edit made before the move is caught");
    assert_eq!((broken.seq, broken.event_id), (3, Some(edited_ids[2])));
    // The chains go on in blocks.
    let next = AuditEvent::success(kept, AuditAction::TokenRead, Actor::Anonymous, vec![]);
    use tessera_audit::AuditStore;
    let outcome = db.db.append_audit_events(&[next]).await.expect("append");
    assert_eq!(outcome[0].result.as_ref().expect("written")[0].first_seq, 6);
    assert!(tessera_audit::verify(&db.db, Some(kept))
        .await
        .expect("verify")
        .ok());
}
