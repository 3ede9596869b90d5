//! # tessera-startup
//!
//! What both binaries (`api` and `proxy-gateway`) do before they serve, so that they stay thin
//! and behave alike: the storage and key flags ([`DbArgs`]), loading the master key, opening and
//! migrating the database, building and checking the [`Vault`], logging, and waiting for
//! SIGTERM or SIGINT. It knows storage but neither HTTP crate.

pub mod audit;
pub mod config_file;
pub mod custody;
pub mod data_key_metrics;
mod db_args;
mod error;
pub mod listener;
pub mod master_key;
pub mod pool_metrics;
pub mod previous_custody;
pub mod secret_file;
pub mod telemetry;

use std::sync::Arc;

use tessera_domain::Vault;
use tessera_storage::{DatabaseUrl, DetachedStore, OnPending};

pub use db_args::{DbArgs, ImplicitTransform};
pub use error::StartupError;
pub use telemetry::LogFormat;
pub use tessera_storage::{Database, MigrationEntry, MigrationState};

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

/// Opens the pool, without looking at the schema (for `api migrate --status`).
pub async fn connect_database(db: &DbArgs) -> Result<(Database, DatabaseUrl), StartupError> {
    let url = db.url()?;
    let database = Database::connect(&url, db.pool_options(&url))
        .await
        .map_err(|source| StartupError::Open {
            url: url.to_string(),
            source,
        })?;
    Ok((database, url))
}

/// Opens the pool, refuses a schema newer than this binary, and applies pending migrations
/// (or, under `--no-migrate`, refuses to start while any are pending).
pub async fn open_database(db: &DbArgs) -> Result<(Database, DatabaseUrl), StartupError> {
    let (database, url) = connect_database(db).await?;
    let on_pending = if db.no_migrate {
        OnPending::Refuse
    } else {
        OnPending::Migrate
    };
    database
        .prepare_schema(on_pending)
        .await
        .map_err(|source| StartupError::Migrate {
            url: url.to_string(),
            source,
        })?;
    let moved = database
        .move_legacy_audit_events()
        .await
        .map_err(|source| StartupError::LegacyAudit {
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

/// What [`open_vault`] opened.
pub struct Opened {
    /// The vault, reading the trail (see [`audit::start_audit`]).
    pub vault: Vault,
    /// Where the trail is kept.
    pub audit_store: Arc<dyn tessera_audit::AuditStore>,
    /// The database, for its pool gauges ([`pool_metrics::PoolMetrics`]).
    pub database: Database,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("database", &self.database)
            .finish_non_exhaustive()
    }
}

/// Opens the database and builds the vault: checks that the master key opens the existing data,
/// and seals the secrets of proxies an earlier release stored in clear. The vault reads the
/// audit trail kept in the database; [`audit::start_audit`] over the returned store records
/// it.
pub async fn open_vault(db: &DbArgs) -> Result<Opened, StartupError> {
    // The key first: a missing key is a configuration error worth reporting before any I/O.
    let url = db.url()?;
    let custodies = custody::load(db.key_files(), &db.custody, &url).await?;
    let (database, _) = open_database(db).await?;
    tracing::info!(custody = %custodies.current.describe(), "key-encrypting key");
    let store = Arc::new(DetachedStore::new(database.clone()));
    let audit_store: Arc<dyn tessera_audit::AuditStore> = store.clone();
    let vault = Vault::with_custody(store, custodies.current, custodies.previous)
        .with_audit(tessera_audit::reader(audit_store.clone()))
        .with_transform_check(Arc::new(tessera_transform_runtime::CompileCheck))
        .with_implicit_transform(db.implicit_transform.into())
        .with_cvc_retention(tessera_domain::token::CvcRetention::new(
            time::Duration::seconds_f64(db.cvc_retention),
        ));
    if let Some(new_key_file) = custodies.new_key_file {
        // A restored database without its key: refuse, and write nothing.
        if vault.holds_wrapped_keys().await.map_err(key_check)? {
            return Err(StartupError::KeyMissing {
                path: new_key_file.path().to_path_buf(),
            });
        }
        new_key_file.write()?;
    }
    vault.verify_master_key().await.map_err(key_check)?;
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
    Ok(Opened {
        vault,
        audit_store,
        database,
    })
}

/// Why the keys did not open the data: a custody that could not be reached (HSM, KMS) is
/// not a wrong key.
fn key_check(e: tessera_domain::VaultError) -> StartupError {
    use tessera_domain::{crypto::CryptoError, VaultError};
    match e {
        VaultError::Crypto(CryptoError::CustodyUnavailable(_)) => {
            StartupError::CustodyUnavailable(e)
        }
        other => StartupError::WrongKey(other),
    }
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

/// What `config check` may show of a secret setting: the database URL without its password
/// (its `Display`); nothing of any other.
pub fn shown_setting(key: &str, value: &str) -> Option<String> {
    (key == "database_url")
        .then(|| value.parse::<DatabaseUrl>().ok().map(|u| u.to_string()))
        .flatten()
}

/// Parses the command line, with the configuration file it names (`--config FILE` or
/// `TESSERA_CONFIG`) supplying the flags' defaults (flag > environment > file). A bad flag or
/// a bad file prints one line (`error: …`) and exits with status 2, while `--help` and
/// `--version` print as usual.
pub fn parse_args<P: clap::Parser>() -> P {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let (named, argv) = config_file::take_flag(&argv);
    let command = match named
        .map(|path| config_file::ConfigFile::read(&path))
        .transpose()
        .and_then(|file| match file {
            Some(file) => file.apply(P::command()),
            None => Ok(P::command()),
        }) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("error: --config {e}");
            std::process::exit(2);
        }
    };
    match command
        .try_get_matches_from(argv)
        .and_then(|matches| P::from_arg_matches(&matches))
    {
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
