//! # tessera-startup
//!
//! What both binaries (`api` and `proxy-gateway`) do before they serve, so that they stay thin
//! and behave alike: the storage and key flags ([`DbArgs`]), loading the master key, opening and
//! migrating the database, building and checking the [`Vault`], logging, and waiting for
//! SIGTERM or SIGINT. It knows storage but neither HTTP crate.

pub mod audit;
pub mod custody;
pub mod listener;
pub mod master_key;
pub mod secret_file;
pub mod telemetry;

use std::{path::PathBuf, sync::Arc};

use clap::{Args, ValueEnum};
use tessera_domain::{Vault, VaultError};
use tessera_service::seconds::SecondsRange;
use tessera_storage::{Database, DatabaseUrl, DetachedStore, PoolOptions};

/// Why the process could not start. Each message names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// `--database-url` does not parse.
    #[error("--database-url: {0}")]
    DatabaseUrl(String),
    /// The master key is missing, malformed or unreadable.
    #[error("{0}")]
    MasterKey(String),
    /// The database could not be opened.
    #[error("cannot open the database at {url}: {source}")]
    Open {
        /// Where (password hidden).
        url: String,
        /// Why.
        source: tessera_domain::store::StoreError,
    },
    /// Migrations failed.
    #[error("cannot migrate the database at {url}: {source}")]
    Migrate {
        /// Where (password hidden).
        url: String,
        /// Why.
        source: tessera_domain::store::StoreError,
    },
    /// The master key does not open the data.
    #[error("the master key does not open the data in this database (wrong TESSERA_MASTER_KEY or key file?): {0}")]
    WrongKey(VaultError),
    /// Sealing proxies written by an earlier release failed.
    #[error("sealing the keys and code of proxies written by an earlier release: {0}")]
    Sealing(VaultError),
    /// The audit stream file cannot be opened.
    #[error("--audit-stream {path}: {source}")]
    AuditStream {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Fingerprinting tokens written by an earlier release failed.
    #[error("computing the fingerprints of tokens written by an earlier release: {0}")]
    Fingerprints(VaultError),
    /// The audit writer's thread could not be started.
    #[error("cannot start the audit writer: {0}")]
    AuditWriter(String),
}

/// Log line format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// What permissions granted without access rules show of token data (docs/api.md,
/// "Transforms").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImplicitTransform {
    /// The plaintext to `token:read` and `token:search`, and no data in the answers to
    /// `token:create` and `token:update` (what Tessera always did).
    Reveal,
    /// Basis Theory's implicit transforms: `mask` for `token:create`, `token:update`,
    /// `token:read` and `token:search`; `reveal` for `token:use`.
    Mask,
}

impl From<ImplicitTransform> for tessera_domain::DataTransform {
    fn from(t: ImplicitTransform) -> Self {
        match t {
            ImplicitTransform::Reveal => tessera_domain::DataTransform::Reveal,
            ImplicitTransform::Mask => tessera_domain::DataTransform::Mask,
        }
    }
}

/// Where the data is and how it is protected.
///
/// `Debug` is written by hand: the database URL may hold a password.
#[derive(Clone, Args)]
pub struct DbArgs {
    /// `sqlite://PATH` (embedded, the default) or `postgres://USER@HOST:PORT/DB`.
    #[arg(
        long,
        env = "TESSERA_DATABASE_URL",
        default_value = "sqlite://./data/tessera.db",
        hide_env_values = true
    )]
    pub database_url: String,
    /// Directory for the generated master key (SQLite only) and the bootstrap admin key.
    #[arg(long, env = "TESSERA_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// File holding the base64 master key. `TESSERA_MASTER_KEY` (the key itself) takes
    /// precedence. Required on PostgreSQL when that variable is unset.
    #[arg(long, env = "TESSERA_MASTER_KEY_FILE")]
    pub master_key_file: Option<PathBuf>,
    /// During a master-key rotation: file holding the previous base64 master key, which still
    /// opens tenants not yet re-wrapped (`TESSERA_PREVIOUS_MASTER_KEY`, the key itself, takes
    /// precedence). Remove it once `api rotate-master-key` has run.
    #[arg(long, env = "TESSERA_PREVIOUS_MASTER_KEY_FILE")]
    pub previous_master_key_file: Option<PathBuf>,
    /// Where the key-encrypting key lives (file or an HSM).
    #[command(flatten)]
    pub custody: custody::CustodyArgs,
    /// Log format.
    #[arg(long, env = "TESSERA_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Seconds between sweeps of a serving process (expired tokens, idempotency keys older
    /// than 24 h); fractions allowed, at most 60. `0` turns sweeping off in this process
    /// (another process on the same database must then sweep).
    #[arg(long, env = "TESSERA_SWEEP_INTERVAL", default_value_t = 30.0, value_parser = SWEEP_INTERVAL.parser())]
    pub sweep_interval: f64,
    /// Longest one SQL statement may run, in seconds (fractions allowed); a request whose
    /// query runs longer gets 503. `0` turns the limit off. PostgreSQL: `statement_timeout`;
    /// SQLite: a progress handler.
    #[arg(long, env = "TESSERA_QUERY_TIMEOUT", default_value_t = tessera_storage::DEFAULT_QUERY_TIMEOUT.as_secs_f64(), value_parser = QUERY_TIMEOUT.parser())]
    pub query_timeout: f64,
    /// What permissions granted without access rules show of token data: `reveal` (the
    /// plaintext to readers, the default) or `mask` (Basis Theory's implicit transforms; set it
    /// when moving from Basis Theory). Access rules always carry their own transform.
    #[arg(long, env = "TESSERA_IMPLICIT_TRANSFORM", value_enum, default_value_t = ImplicitTransform::Reveal)]
    pub implicit_transform: ImplicitTransform,
    /// Seconds a card's CVC is kept after the token's creation (fractions allowed, at most a
    /// week); `0`: never stored. Past it, reads no longer see the CVC and the sweep seals the
    /// data again without it (PCI DSS 3.3.1.2).
    #[arg(long, env = "TESSERA_CVC_RETENTION", default_value_t = tessera_domain::token::DEFAULT_CVC_RETENTION.as_seconds_f64(), value_parser = CVC_RETENTION.parser())]
    pub cvc_retention: f64,
}

impl std::fmt::Debug for DbArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbArgs")
            .field("database_url", &self.database_url_display())
            .field("data_dir", &self.data_dir)
            .field("master_key_file", &self.master_key_file)
            .field("previous_master_key_file", &self.previous_master_key_file)
            .field("custody", &self.custody)
            .field("log_format", &self.log_format)
            .field("sweep_interval", &self.sweep_interval)
            .field("query_timeout", &self.query_timeout)
            .field("implicit_transform", &self.implicit_transform)
            .field("cvc_retention", &self.cvc_retention)
            .finish()
    }
}

/// What `--query-timeout` accepts (0: no limit).
const QUERY_TIMEOUT: SecondsRange = SecondsRange::between(0.0, 3600.0);
/// What `--cvc-retention` accepts (0: never stored; at most a week).
/// The week is `tessera_domain::token::MAX_CVC_RETENTION`.
const CVC_RETENTION: SecondsRange = SecondsRange::between(0.0, 604_800.0);
/// What `--sweep-interval` accepts (0: no sweeping).
const SWEEP_INTERVAL: SecondsRange = SecondsRange::between(0.0, 60.0);

/// Sweeps expired tokens, old idempotency keys and audit events past retention every `interval` (see [`Vault::sweep`]),
/// for as long as the runtime runs; `None` for a zero interval. Failures are logged and the
/// next round tries again. Any number of processes may sweep one database.
pub fn spawn_sweeper(
    vault: Vault,
    interval: std::time::Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    if interval.is_zero() {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match vault.sweep().await {
                Ok(report)
                    if report.expired_tokens
                        + report.idempotency_keys
                        + report.audit_events
                        + report.cvcs_removed
                        > 0 =>
                {
                    tracing::info!(
                        expired_tokens = report.expired_tokens,
                        idempotency_keys = report.idempotency_keys,
                        audit_events = report.audit_events,
                        cvcs_removed = report.cvcs_removed,
                        "sweep deleted expired rows"
                    );
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "sweep failed; retrying next round"),
            }
        }
    }))
}

impl DbArgs {
    /// The database URL with any password hidden, for logs.
    pub fn database_url_display(&self) -> String {
        self.database_url
            .parse::<DatabaseUrl>()
            .map_or_else(|_| "(invalid)".to_string(), |u| u.to_string())
    }

    /// The sweep interval as a duration (zero: off).
    pub fn sweep_interval(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.sweep_interval)
    }

    /// The pool options these flags ask for.
    pub fn pool_options(&self, url: &DatabaseUrl) -> PoolOptions {
        let timeout = std::time::Duration::from_secs_f64(self.query_timeout);
        PoolOptions {
            query_timeout: (!timeout.is_zero()).then_some(timeout),
            ..PoolOptions::default_for(url)
        }
    }

    fn url(&self) -> Result<DatabaseUrl, StartupError> {
        self.database_url
            .parse()
            .map_err(|e: tessera_storage::DatabaseUrlError| {
                StartupError::DatabaseUrl(e.to_string())
            })
    }
}

/// Opens the pool and applies pending migrations.
pub async fn open_database(db: &DbArgs) -> Result<(Database, DatabaseUrl), StartupError> {
    let url = db.url()?;
    let database = Database::connect(&url, db.pool_options(&url))
        .await
        .map_err(|source| StartupError::Open {
            url: url.to_string(),
            source,
        })?;
    database
        .migrate()
        .await
        .map_err(|source| StartupError::Migrate {
            url: url.to_string(),
            source,
        })?;
    let moved = database
        .move_legacy_audit_events()
        .await
        .map_err(|source| StartupError::Migrate {
            url: url.to_string(),
            source,
        })?;
    if moved > 0 {
        tracing::info!(
            moved,
            "moved the audit events of an earlier release into blocks"
        );
    }
    Ok((database, url))
}

/// Opens the database and builds the vault: checks that the master key opens the existing data,
/// and seals the secrets of proxies an earlier release stored in clear. The vault reads the
/// audit trail kept in the database; [`audit::start_audit`] over the returned store records
/// it.
pub async fn open_vault(
    db: &DbArgs,
) -> Result<(Vault, Arc<dyn tessera_audit::AuditStore>), StartupError> {
    // The key first: a missing key is a configuration error worth reporting before any I/O.
    let url = db.url()?;
    let (custody, previous) = custody::load(db, &url)?;
    let (database, _) = open_database(db).await?;
    tracing::info!(custody = %custody.describe(), "key-encrypting key");
    let store = Arc::new(DetachedStore::new(database));
    let audit_store: Arc<dyn tessera_audit::AuditStore> = store.clone();
    let vault = Vault::with_custody(store, custody, previous)
        .with_audit(tessera_audit::reader(audit_store.clone()))
        .with_transform_check(Arc::new(tessera_transform_runtime::CompileCheck))
        .with_implicit_transform(db.implicit_transform.into())
        .with_cvc_retention(tessera_domain::token::CvcRetention::new(
            time::Duration::seconds_f64(db.cvc_retention),
        ));
    vault
        .verify_master_key()
        .await
        .map_err(StartupError::WrongKey)?;
    let sealed = vault
        .seal_legacy_proxies()
        .await
        .map_err(StartupError::Sealing)?;
    if sealed > 0 {
        tracing::info!(
            sealed,
            "sealed the keys and transform code of proxies written by an earlier release"
        );
    }
    let fingerprinted = vault
        .backfill_fingerprints()
        .await
        .map_err(StartupError::Fingerprints)?;
    if fingerprinted > 0 {
        tracing::info!(
            fingerprinted,
            "computed the fingerprints of tokens written by an earlier release"
        );
    }
    Ok((vault, audit_store))
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// When this process was started as a transform sandbox (first argument
/// [`tessera_transform_runtime::SANDBOX_ARG`], by a gateway running transforms in process
/// isolation), becomes one and never returns; otherwise does nothing. Call it first in `main`,
/// before anything reads the environment or opens a file.
pub fn enter_sandbox_if_asked() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == tessera_transform_runtime::SANDBOX_ARG)
    {
        tessera_transform_runtime::sandbox_main()
    }
}

/// Runs `main` on a multi-threaded runtime; an error prints as one line (its whole cause
/// chain, `{:#}`) and exits 1.
pub fn run_main<F, E>(main: impl FnOnce() -> F) -> std::process::ExitCode
where
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(main()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Parses the command line; a bad flag prints one line (`error: …`, pointing at `--help`) and
/// exits with status 2, while `--help` and `--version` print as usual.
pub fn parse_args<P: clap::Parser>() -> P {
    match P::try_parse() {
        Ok(parsed) => parsed,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            let rendered = e.to_string();
            let first = rendered
                .lines()
                .next()
                .unwrap_or("error: invalid arguments");
            eprintln!("{first} (see --help)");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        db: super::DbArgs,
    }

    #[test]
    fn seconds_flags_are_bounded() {
        let parse = |arg: &str| {
            Cli::try_parse_from(["x", arg])
                .map(|cli| (cli.db.query_timeout, cli.db.sweep_interval))
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse("--query-timeout=3600"), Ok((3600.0, 30.0)));
        assert_eq!(parse("--sweep-interval=0"), Ok((10.0, 0.0)));
        for (arg, bound) in [
            ("--query-timeout=1e19", "must be from 0 to 3600 seconds"),
            ("--query-timeout=NaN", "must be from 0 to 3600 seconds"),
            ("--sweep-interval=61", "must be from 0 to 60 seconds"),
            ("--sweep-interval=-1", "must be from 0 to 60 seconds"),
        ] {
            let error = parse(arg).expect_err(arg);
            assert!(error.contains(bound), "{arg}: {error}");
        }
    }

    #[test]
    fn db_args_debug_hides_the_database_password() {
        let cli = Cli::parse_from([
            "x",
            "--database-url",
            "postgres://tessera:s3cr3t-pw@db.internal:5432/tessera",
        ]);
        let printed = format!("{:?}", cli.db);
        assert!(!printed.contains("s3cr3t-pw"), "{printed}");
        assert!(printed.contains("db.internal"), "{printed}");
    }
}
