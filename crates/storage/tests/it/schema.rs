//! The upgrade contract on both backends (docs/operations.md, "Upgrading"): `migrate
//! --status` lists every migration, a schema newer than the binary is refused whether or not
//! the process migrates, pending migrations are refused under `--no-migrate` and run otherwise,
//! and two migrators started together leave one schema.

use tessera_storage::{MigrationState, OnPending, SchemaError};
use tessera_testkit::db::{postgres_required, TestDatabase, PG_URL_VAR};

/// A migration this binary cannot know: a later release's.
const FUTURE: &str = "29991231000001";
/// An early migration, to leave a database as an older release did.
const EARLY: &str = "2026-11-21-000003";

mod sqlite {
    #[tokio::test]
    async fn a_newer_schema_is_refused() {
        super::a_newer_schema_is_refused(&super::TestDatabase::sqlite().await).await;
    }

    #[tokio::test]
    async fn pending_migrations_are_listed_refused_or_run() {
        let db = super::TestDatabase::sqlite_through(Some(super::EARLY)).await;
        super::pending_migrations_are_listed_refused_or_run(&db).await;
    }
}

mod postgres {
    #[tokio::test]
    async fn a_newer_schema_is_refused() {
        match super::TestDatabase::postgres().await {
            Some(db) => super::a_newer_schema_is_refused(&db).await,
            None if super::postgres_required() => {
                panic!("CI=true but {} is unset", super::PG_URL_VAR)
            }
            None => eprintln!("skipped: set {} to run PostgreSQL tests", super::PG_URL_VAR),
        }
    }

    #[tokio::test]
    async fn pending_migrations_are_listed_refused_or_run() {
        match super::TestDatabase::postgres_through(Some(super::EARLY)).await {
            Some(db) => super::pending_migrations_are_listed_refused_or_run(&db).await,
            None if super::postgres_required() => {
                panic!("CI=true but {} is unset", super::PG_URL_VAR)
            }
            None => eprintln!("skipped: set {} to run PostgreSQL tests", super::PG_URL_VAR),
        }
    }
}

/// The migrations this binary embeds for `db`'s backend, from the repository's directories.
fn known_migrations(db: &TestDatabase) -> Vec<String> {
    let backend = match db.url {
        tessera_storage::DatabaseUrl::Sqlite { .. } => "sqlite",
        tessera_storage::DatabaseUrl::Postgres { .. } => "postgres",
    };
    let dir = format!("{}/../../migrations/{backend}", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("migrations directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn a_newer_schema_is_refused(db: &TestDatabase) {
    let status = db.db.schema_status().await.expect("status");
    assert_eq!(status.len(), known_migrations(db).len());
    assert!(status.iter().all(|m| m.state == MigrationState::Applied));
    db.execute(&format!(
        "INSERT INTO __diesel_schema_migrations (version) VALUES ('{FUTURE}')"
    ))
    .await;
    for outcome in [
        db.db.migrate().await,
        db.db.prepare_schema(OnPending::Migrate).await,
        db.db.prepare_schema(OnPending::Refuse).await,
    ] {
        match outcome {
            Err(SchemaError::Newer { unknown }) => assert_eq!(unknown, [FUTURE]),
            other => panic!("a newer schema was not refused: {other:?}"),
        }
    }
    let error = db.db.migrate().await.expect_err("refused").to_string();
    assert!(error.contains("newer than this binary"), "{error}");
    let status = db.db.schema_status().await.expect("status");
    let last = status.last().expect("entries");
    assert_eq!(
        (last.version.as_str(), last.state),
        (FUTURE, MigrationState::Unknown)
    );
}

async fn pending_migrations_are_listed_refused_or_run(db: &TestDatabase) {
    let known = known_migrations(db);
    let status = db.db.schema_status().await.expect("status");
    let names: Vec<String> = status.iter().map(|m| m.name.clone()).collect();
    let expected: Vec<String> = known
        .iter()
        .map(|d| d.split_once('_').expect("name").1.to_string())
        .collect();
    assert_eq!(names, expected, "every migration, in order, by name");
    let applied = status
        .iter()
        .filter(|m| m.state == MigrationState::Applied)
        .count();
    assert_eq!(applied, 3, "{status:?}");
    assert_eq!(status[0].version, "20261121000001");
    match db.db.prepare_schema(OnPending::Refuse).await {
        Err(SchemaError::Pending { pending }) => assert_eq!(pending.len(), known.len() - 3),
        other => panic!("pending migrations were not refused: {other:?}"),
    }
    // Two migrators at once: one waits for the other's lock, then finds nothing to do.
    let (a, b) = tokio::join!(db.db.migrate(), db.db.migrate());
    a.expect("first migrator");
    b.expect("second migrator");
    let status = db.db.schema_status().await.expect("status");
    assert!(status.iter().all(|m| m.state == MigrationState::Applied));
    db.db
        .prepare_schema(OnPending::Refuse)
        .await
        .expect("nothing pending");
}
