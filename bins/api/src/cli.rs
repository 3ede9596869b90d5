//! Command-line and environment configuration. Every flag also reads `TESSERA_<FLAG>`.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Tessera: a self-hosted tokenization vault. Without a subcommand, `serve` runs.
#[derive(Debug, Parser)]
#[command(name = "api", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of `serve`, accepted without the subcommand too.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the management API (the default).
    Serve(ServeArgs),
    /// Manage tenants.
    Tenants {
        /// Tenant operation.
        #[command(subcommand)]
        command: TenantsCommand,
    },
    /// Apply pending database migrations and exit.
    Migrate(DbArgs),
    /// Print the OpenAPI 3.1 document (the one served at `/openapi.json`) and exit.
    Openapi,
    /// Re-wrap every tenant's data key under the current master key (the previous one given by
    /// `TESSERA_PREVIOUS_MASTER_KEY` or `--previous-master-key-file`); prints what it did as
    /// JSON. Token data is not re-encrypted. Safe to run again.
    RotateMasterKey(DbArgs),
}

/// Tenant operations.
#[derive(Debug, Subcommand)]
pub enum TenantsCommand {
    /// Create a tenant with an `admin` management application; prints
    /// `{"tenant_id", "application_id", "api_key"}` as JSON.
    Create {
        /// The tenant's name (1–200 characters).
        #[arg(long, env = "TESSERA_NAME")]
        name: String,
        /// Database flags.
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Log line format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where the data is and how it is protected.
#[derive(Debug, Clone, Args)]
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
    /// Log format.
    #[arg(long, env = "TESSERA_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl DbArgs {
    /// The database URL with any password hidden, for logs.
    pub fn database_url_display(&self) -> String {
        self.database_url
            .parse::<tessera_storage::DatabaseUrl>()
            .map_or_else(|_| "(invalid)".to_string(), |u| u.to_string())
    }
}

/// Flags of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Database flags.
    #[command(flatten)]
    pub db: DbArgs,
    /// Address to listen on.
    #[arg(long, env = "TESSERA_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Do not create a `default` tenant on an empty database.
    #[arg(long, env = "TESSERA_NO_BOOTSTRAP")]
    pub no_bootstrap: bool,
    /// Do not serve `/proxy` from this process (run `proxy-gateway` separately).
    #[arg(long, env = "TESSERA_NO_GATEWAY")]
    pub no_gateway: bool,
    /// Gateway and request-size flags.
    #[command(flatten)]
    pub gateway: GatewayArgs,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "TESSERA_WORKERS")]
    pub workers: Option<usize>,
}

/// Flags of the proxy gateway (also accepted by `api serve`, which mounts it at `/proxy`).
#[derive(Debug, Clone, Args)]
pub struct GatewayArgs {
    /// Largest request body accepted, in bytes (413 above).
    #[arg(long, env = "TESSERA_MAX_BODY_BYTES", default_value_t = tessera_http::DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Largest size, in bytes, detokenization may expand a proxied request to (body and header
    /// values); a request whose expressions could expand past it is refused with 413 before
    /// any token is decrypted.
    #[arg(long, env = "TESSERA_MAX_RENDERED_BYTES", default_value_t = tessera_http::DEFAULT_MAX_RENDERED_BYTES)]
    pub max_rendered_bytes: u64,
    /// Accept proxy destinations over plain `http` and in private, loopback and link-local
    /// ranges (tests and internal deployments only).
    #[arg(long, env = "TESSERA_ALLOW_PRIVATE_DESTINATIONS")]
    pub allow_private_destinations: bool,
    /// Seconds to wait for a destination's response headers, from the start of the connect
    /// (504 after).
    #[arg(long, env = "TESSERA_DESTINATION_TIMEOUT", default_value_t = 25.0)]
    pub destination_timeout: f64,
    /// Extra trusted CA certificate(s), PEM, for destinations on a private PKI.
    #[arg(long, env = "TESSERA_DESTINATION_CA_FILE")]
    pub destination_ca_file: Option<PathBuf>,
    /// Seconds that API-key and proxy-key lookups and the (encrypted) token rows detokenization
    /// reads are cached; changes made through other processes are obeyed within this. 0
    /// disables caching; at most 2.
    #[arg(long, env = "TESSERA_CACHE_TTL", default_value_t = 1.0)]
    pub cache_ttl: f64,
    /// Seconds one transform invocation may run (its runtime is discarded after).
    #[arg(long, env = "TESSERA_TRANSFORM_TIMEOUT", default_value_t = 2.0)]
    pub transform_timeout: f64,
    /// Memory one transform invocation may allocate, in MiB.
    #[arg(long, env = "TESSERA_TRANSFORM_MEMORY_MB", default_value_t = 32)]
    pub transform_memory_mb: usize,
    /// Most distinct tokens one proxied request may detokenize.
    #[arg(long, env = "TESSERA_MAX_TOKENS_PER_REQUEST", default_value_t = 100)]
    pub max_tokens_per_request: usize,
    /// Requests per second allowed per application on the management API and per proxy on
    /// `/proxy`, in this process (429 with `Retry-After` above it). 0 (the default): no limit.
    #[arg(long, env = "TESSERA_RATE_LIMIT", default_value_t = 0.0)]
    pub rate_limit: f64,
    /// Requests allowed at once above `--rate-limit` after a quiet period (default: the rate,
    /// at least 1).
    #[arg(long, env = "TESSERA_RATE_LIMIT_BURST")]
    pub rate_limit_burst: Option<f64>,
}

impl GatewayArgs {
    /// Checks the values clap cannot, so that a bad flag stops the process before it touches
    /// the database.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(self.destination_timeout.is_finite() && self.destination_timeout > 0.0) {
            anyhow::bail!("--destination-timeout must be a positive number of seconds");
        }
        if !(0.0..=2.0).contains(&self.cache_ttl) {
            anyhow::bail!("--cache-ttl must be between 0 and 2 seconds");
        }
        if !(self.transform_timeout.is_finite() && self.transform_timeout > 0.0) {
            anyhow::bail!("--transform-timeout must be a positive number of seconds");
        }
        self.rate_limit().map(|_| ())
    }

    /// The configured rate limit, if any.
    pub fn rate_limit(&self) -> anyhow::Result<Option<tessera_http::rate_limit::RateLimit>> {
        if self.rate_limit == 0.0 {
            return Ok(None);
        }
        let burst = self.rate_limit_burst.unwrap_or(self.rate_limit);
        match tessera_http::rate_limit::RateLimit::new(self.rate_limit, burst) {
            Some(limit) if burst.is_finite() && burst >= 0.0 => Ok(Some(limit)),
            _ => anyhow::bail!(
                "--rate-limit must be a positive number of requests per second (0 for none) and --rate-limit-burst a positive number"
            ),
        }
    }
}
