//! TLS to PostgreSQL (docs/operations.md, "TLS to the database"), against the server of
//! `TESSERA_TEST_DATABASE_URL`, which must speak TLS (CI's clusters do): the pool's
//! connections are encrypted when the URL asks, and a certificate no given CA signed is refused
//! under `verify-ca` and `verify-full` before anything is sent.

use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use tessera_storage::{Database, DatabaseUrl, PoolOptions};
use tessera_testkit::db::{postgres_required, PG_URL_VAR};

mod postgres {
    #[tokio::test]
    async fn connections_are_encrypted_when_the_url_asks() {
        match super::server_url() {
            Some(url) => super::connections_are_encrypted_when_the_url_asks(&url).await,
            None => super::skipped(),
        }
    }

    #[tokio::test]
    async fn a_certificate_from_another_ca_is_refused() {
        match super::server_url() {
            Some(url) => super::a_certificate_from_another_ca_is_refused(&url).await,
            None => super::skipped(),
        }
    }
}

fn server_url() -> Option<String> {
    std::env::var(PG_URL_VAR).ok().filter(|u| !u.is_empty())
}

fn skipped() {
    assert!(!postgres_required(), "CI=true but {PG_URL_VAR} is unset");
    eprintln!("skipped: set {PG_URL_VAR} to run PostgreSQL tests");
}

/// `url` with its own `sslmode`/`sslrootcert` replaced by `tls` (and `extra`).
fn with_tls(url: &str, tls: &str) -> String {
    let mut parsed = url::Url::parse(url).expect("url");
    let kept: Vec<String> = parsed
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("sslmode=") && !p.starts_with("sslrootcert="))
        .map(str::to_string)
        .chain(std::iter::once(tls.to_string()))
        .collect();
    parsed.set_query(Some(&kept.join("&")));
    parsed.to_string()
}

async fn open(url: &str) -> Result<Database, tessera_domain::store::StoreError> {
    let url: DatabaseUrl = url.parse().expect("a valid URL");
    Database::connect(&url, PoolOptions::default_for(&url)).await
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

async fn connections_are_encrypted_when_the_url_asks(server: &str) {
    // The suite's own mode when it names one (CI's verify-full run), else `require`.
    let name = format!("tessera_tls_{}", uuid::Uuid::new_v4().simple());
    let base = if server.contains("sslmode=") {
        server.to_string()
    } else {
        with_tls(server, "sslmode=require")
    };
    let url = format!("{base}&application_name={name}");
    let db = open(&url).await.expect("connects over TLS");
    db.batch_execute("SELECT 1").await.expect("a query");
    let mut watcher = tessera_storage::postgres_connection(server)
        .await
        .expect("admin");
    let sql = |ssl: bool| {
        format!(
            "SELECT COUNT(*) AS n FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
             WHERE a.application_name = '{name}' AND s.ssl = {ssl}"
        )
    };
    let encrypted: Vec<Count> = diesel::sql_query(sql(true))
        .load(&mut watcher)
        .await
        .expect("pg_stat_ssl");
    let clear: Vec<Count> = diesel::sql_query(sql(false))
        .load(&mut watcher)
        .await
        .expect("pg_stat_ssl");
    assert!(encrypted[0].n >= 1, "no encrypted connection of the pool");
    assert_eq!(clear[0].n, 0, "a connection of the pool is not encrypted");
    drop(db);
}

async fn a_certificate_from_another_ca_is_refused(server: &str) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let other_ca = params.self_signed(&key).expect("ca");
    let file = tempfile::NamedTempFile::new().expect("file");
    std::fs::write(file.path(), other_ca.pem()).expect("write");
    for mode in ["verify-ca", "verify-full"] {
        let tls = format!("sslmode={mode}&sslrootcert={}", file.path().display());
        let error = open(&with_tls(server, &tls))
            .await
            .expect_err("a server certificate no given CA signed is refused");
        let text = error.to_string();
        assert!(
            text.contains("certificate") || text.contains("UnknownIssuer"),
            "{mode}: {text}"
        );
    }
}
