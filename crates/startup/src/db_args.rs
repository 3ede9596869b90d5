//! Where the data is and how it is protected: the storage and key flags both binaries take.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tessera_service::seconds::SecondsRange;
use tessera_storage::{DatabaseUrl, PoolOptions};

use crate::{custody, error::StartupError, master_key::KeyFiles, telemetry::LogFormat};

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
    /// Do not run pending migrations at start-up: refuse to start until `api migrate` has run
    /// (docs/operations.md, "Upgrading"). Without it, the first process to take the migration
    /// lock runs them. Either way a schema newer than this binary is refused.
    #[arg(long, env = "TESSERA_NO_MIGRATE")]
    pub no_migrate: bool,
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
            .field("no_migrate", &self.no_migrate)
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

impl DbArgs {
    /// Where the master key files are.
    pub fn key_files(&self) -> KeyFiles<'_> {
        KeyFiles {
            master_key_file: self.master_key_file.as_deref(),
            previous_master_key_file: self.previous_master_key_file.as_deref(),
            data_dir: &self.data_dir,
        }
    }

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

    pub(crate) fn url(&self) -> Result<DatabaseUrl, StartupError> {
        self.database_url
            .parse()
            .map_err(|e: tessera_storage::DatabaseUrlError| {
                StartupError::DatabaseUrl(e.to_string())
            })
    }
}
