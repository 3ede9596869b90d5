//! Command-line and environment configuration. Every flag also reads `TESSERA_<FLAG>`.

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand};
use tessera_console::ConsoleArgs;
use tessera_domain::TenantId;
use tessera_gateway::GatewayArgs;
use tessera_startup::{audit::AuditArgs, DbArgs};

/// Tessera: a self-hosted tokenization vault. Without a subcommand, `serve` runs.
#[derive(Debug, Parser)]
#[command(
    name = "api",
    version = crate::VERSION,
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Cli {
    /// `--config FILE` (read before parsing: see `tessera_startup::parse_args`).
    #[command(flatten)]
    pub(crate) _config: tessera_startup::config_file::ConfigFlag,
    /// What to do (default: serve).
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Flags of `serve`, accepted without the subcommand too.
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the management API (the default).
    Serve(Box<ServeArgs>),
    /// Manage tenants.
    Tenants {
        /// Tenant operation.
        #[command(subcommand)]
        command: TenantsCommand,
    },
    /// Apply pending database migrations and exit; with `--status`, list every migration
    /// (applied, pending, or applied by a newer release) instead.
    Migrate(MigrateArgs),
    /// The configuration file.
    Config {
        /// Configuration operation.
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print the OpenAPI 3.1 document (the one served at `/openapi.json`) and exit.
    Openapi,
    /// Re-wrap every tenant's data key under the current master key (the previous one given by
    /// `TESSERA_PREVIOUS_MASTER_KEY` or `--previous-master-key-file`); prints what it did as
    /// JSON. Token data is not re-encrypted. Safe to run again.
    RotateMasterKey(DbArgs),
    /// Tenants' data keys: rotate them (a new version, and every row re-encrypted under it),
    /// see the versions in use, retire the ones no row uses (docs/operations.md, "Rotating
    /// data keys").
    DataKeys {
        /// Data-key operation.
        #[command(subcommand)]
        command: DataKeysCommand,
    },
    /// The audit trail.
    Audit {
        /// Audit operation.
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Webhooks: the deployment's signing key (docs/webhooks.md).
    Webhooks {
        /// Webhook operation.
        #[command(subcommand)]
        command: WebhooksCommand,
    },
    /// Store a token export (JSON lines, one token a line) through a running server's
    /// `POST /tokenize`: rows refused alone with their line and reason, rows already stored
    /// skipped by id (a rerun resumes), what is not kept reported. Prints a JSON summary;
    /// exits 1 when rows were refused.
    Import(ImportArgs),
}

/// `api webhooks …`.
#[derive(Debug, Subcommand)]
pub(crate) enum WebhooksCommand {
    /// Publish a new webhook signing key that signs from `--overlap-hours` on; until then the
    /// current key signs, and both are listed at `GET /webhooks/signing-keys`. Prints the new
    /// key's version, its activation time and its public PEM as JSON.
    RotateSigningKey {
        /// Hours between publishing the new key and signing with it: the time receivers have
        /// to take it (0: at once).
        #[arg(long, default_value_t = 24)]
        overlap_hours: u32,
        /// Database flags.
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Webhook delivery flags of `serve` (docs/webhooks.md, "Operating").
#[derive(Debug, Clone, Args)]
pub(crate) struct WebhookArgs {
    /// Deliver no webhooks from this process (another process or replica delivers them).
    #[arg(long, env = "TESSERA_NO_WEBHOOKS")]
    pub(crate) no_webhooks: bool,
    /// Seconds a process holds a webhook without renewing its claim: after a crash, the
    /// longest its webhooks wait for another process to take them over (at least 2).
    #[arg(long, env = "TESSERA_WEBHOOK_LEASE_SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(2..=3600))]
    pub(crate) webhook_lease_seconds: u64,
    /// Seconds of continuous delivery failure after which a webhook is disabled (12 hours
    /// unless set).
    #[arg(long, env = "TESSERA_WEBHOOK_DISABLE_AFTER", default_value_t = 43_200,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) webhook_disable_after: u64,
    /// Seconds a receiver has to answer one delivery (connect included).
    #[arg(long, env = "TESSERA_WEBHOOK_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=60))]
    pub(crate) webhook_timeout: u64,
}

/// Flags of `migrate`.
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// List every migration, by version and name, applied or pending, and change nothing.
    #[arg(long)]
    pub(crate) status: bool,
    /// With `--status`: print JSON (`[{"version", "name", "state"}]`) instead of a table.
    #[arg(long, requires = "status")]
    pub(crate) json: bool,
    /// Database flags.
    #[command(flatten)]
    pub(crate) db: DbArgs,
}

/// Flags of `import`.
#[derive(Clone, Args)]
pub(crate) struct ImportArgs {
    /// The export: one JSON token a line (`id`, `type`, `data`, `metadata`, `containers`,
    /// `expires_at`, `search_indexes`, `fingerprint_expression`; other fields are reported).
    pub(crate) file: std::path::PathBuf,
    /// The running server's base URL.
    #[arg(long, env = "TESSERA_URL", default_value = "http://127.0.0.1:8080")]
    pub(crate) url: url::Url,
    /// A `private` or `management` API key holding `token:create` on the target containers.
    #[arg(long, env = "TESSERA_API_KEY", hide_env_values = true)]
    pub(crate) api_key: String,
    /// The server's header prefix (its `--header-prefix`): the key goes in `<PREFIX>-API-KEY`.
    #[arg(
        long = "header-prefix",
        env = "TESSERA_HEADER_PREFIX",
        default_value = "SVC"
    )]
    pub(crate) header_prefix: String,
    /// Batches in flight at once.
    #[arg(long, env = "TESSERA_IMPORT_CONCURRENCY", default_value_t = 8)]
    pub(crate) concurrency: usize,
    /// Rows per batch (1–100).
    #[arg(long, env = "TESSERA_IMPORT_BATCH_SIZE", default_value_t = 100)]
    pub(crate) batch_size: usize,
    /// A PEM file of CA certificates to trust beside the web's roots, for a server whose
    /// certificate a private CA signed.
    #[arg(long = "ca-file", env = "TESSERA_IMPORT_CA_FILE")]
    pub(crate) ca_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for ImportArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The API key is a secret: never printed.
        f.debug_struct("ImportArgs")
            .field("file", &self.file)
            .field("url", &self.url.as_str())
            .field("header_prefix", &self.header_prefix)
            .field("concurrency", &self.concurrency)
            .field("batch_size", &self.batch_size)
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

/// Configuration-file operations.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Validate a configuration file and print the effective settings of `serve` (the file,
    /// the environment and the defaults; secrets redacted), each with where it came from.
    /// Unknown keys and bad values fail, naming the key.
    Check {
        /// The TOML file.
        file: std::path::PathBuf,
    },
}

/// Audit-trail operations.
#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Re-walk the audit hash chains (every tenant's, or one) and print, as JSON, the events
    /// checked, each chain's head (keep it elsewhere as an anchor) and the first broken link;
    /// exits 1 when a chain is broken. Needs the database only, not the master key.
    Verify {
        /// Only this tenant's chain.
        #[arg(long)]
        tenant: Option<TenantId>,
        /// Database flags.
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Data-key operations.
#[derive(Debug, Subcommand)]
pub(crate) enum DataKeysCommand {
    /// Give the tenant's data key (or every tenant's) a new version, which seals from then on,
    /// and re-encrypt every row under it; waits for the job and prints each tenant's status as
    /// JSON. Run again after an interruption: an unfinished job resumes where it stopped.
    Rotate {
        /// The tenant.
        #[arg(long, required_unless_present = "all", conflicts_with = "all")]
        tenant: Option<tessera_domain::TenantId>,
        /// Every tenant, one after another.
        #[arg(long)]
        all: bool,
        /// Rows re-encrypted per second at most (per tenant's job).
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
        rows_per_second: u32,
        /// How long another process waits before taking over a job whose process stopped (a
        /// crash, kill -9).
        #[arg(long, default_value_t = 30.0)]
        lease_seconds: f64,
        /// Database flags.
        #[command(flatten)]
        db: DbArgs,
    },
    /// Print, as JSON, each tenant's data-key versions and the rows on each, and its job.
    Status {
        /// One tenant (default: every tenant, as a JSON array).
        #[arg(long)]
        tenant: Option<tessera_domain::TenantId>,
        /// Database flags.
        #[command(flatten)]
        db: DbArgs,
    },
    /// Destroy a version of the tenant's data key (by default the oldest), only when no row
    /// uses it; refused, saying how many rows remain, otherwise.
    Retire {
        /// The tenant.
        #[arg(long)]
        tenant: tessera_domain::TenantId,
        /// The version (default: the oldest held).
        #[arg(long)]
        version: Option<u32>,
        /// Database flags.
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Tenant operations.
#[derive(Debug, Subcommand)]
pub(crate) enum TenantsCommand {
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
    /// Delete a tenant: destroy its data keys first (crypto-shredding), then delete its rows;
    /// both recorded in the deployment's audit chain. Prints
    /// `{"tenant_id", "keys_destroyed_now", "deleted"}` as JSON. Run again if interrupted.
    Delete {
        /// The tenant's id.
        id: tessera_domain::TenantId,
        /// Database flags.
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Flags of `serve`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServeArgs {
    /// Database flags.
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Address to listen on.
    #[arg(long, env = "TESSERA_LISTEN", default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// Do not create a `default` tenant on an empty database.
    #[arg(long, env = "TESSERA_NO_BOOTSTRAP")]
    pub(crate) no_bootstrap: bool,
    /// Do not serve `/proxy` from this process (run `proxy-gateway` separately).
    #[arg(long, env = "TESSERA_NO_GATEWAY")]
    pub(crate) no_gateway: bool,
    /// Gateway and request-size flags.
    #[command(flatten)]
    pub(crate) gateway: GatewayArgs,
    /// Audit-trail flags.
    #[command(flatten)]
    pub(crate) audit: AuditArgs,
    /// Web console flags.
    #[command(flatten)]
    pub(crate) console: ConsoleArgs,
    /// Hosted card fields flags.
    #[command(flatten)]
    pub(crate) elements: tessera_elements::ElementsArgs,
    /// Webhook delivery flags.
    #[command(flatten)]
    pub(crate) webhooks: WebhookArgs,
    /// Requests per second each public key may make from one client address (browsers and
    /// mobile apps; card testing is answered with 429).
    #[arg(long, env = "TESSERA_PUBLIC_RATE_LIMIT", default_value_t = 5.0)]
    pub(crate) public_rate_limit: f64,
    /// Requests a public key may make at once from one client address.
    #[arg(long, env = "TESSERA_PUBLIC_RATE_LIMIT_BURST", default_value_t = 50.0)]
    pub(crate) public_rate_limit_burst: f64,
    /// IP addresses of reverse proxies in front of the API (comma-separated): from these
    /// peers only, `X-Forwarded-For` names the client that the public keys' limit counts.
    #[arg(long, env = "TESSERA_TRUSTED_PROXIES", value_delimiter = ',')]
    pub(crate) trusted_proxies: Vec<std::net::IpAddr>,
    /// Development only: also serve, on this loopback address, an echo destination that
    /// answers every request with what it received (method, path, headers, body) as JSON, to
    /// see a proxy's detokenization and transforms without a third party. A proxy pointed at
    /// it shows token data to its caller: never on a deployment that holds real data.
    #[arg(long, env = "TESSERA_DEV_ECHO", value_name = "ADDR")]
    pub(crate) dev_echo: Option<SocketAddr>,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "TESSERA_WORKERS")]
    pub(crate) workers: Option<usize>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::CommandFactory;

    use super::Cli;

    /// The documents whose tables list the flags: the README's quick reference and the
    /// operator's guide.
    const DOCUMENTS: [&str; 2] = ["README.md", "docs/operations.md"];

    fn read(document: &str) -> String {
        std::fs::read_to_string(format!("{}/../../{document}", env!("CARGO_MANIFEST_DIR")))
            .expect(document)
    }

    /// Every visible long flag of `command` and its subcommands, with its environment variable.
    fn flags(command: &clap::Command, out: &mut BTreeMap<String, Option<String>>) {
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if arg.is_hide_set() || long == "help" || long == "version" {
                continue;
            }
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            out.insert(long.to_string(), env);
        }
        for sub in command.get_subcommands() {
            flags(sub, out);
        }
    }

    /// `api <path>` for every leaf subcommand (`tenants create`, `audit verify`, `migrate`, …).
    fn subcommands(command: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        for sub in command.get_subcommands() {
            let path = format!("{prefix}{}", sub.get_name());
            if sub.has_subcommands() {
                subcommands(sub, &format!("{path} "), out);
            } else {
                out.push(path);
            }
        }
    }

    /// The configuration tables have a row for every flag, naming its environment variable,
    /// and the subcommand tables a row for every subcommand: they cannot fall behind the code.
    #[test]
    fn the_docs_document_every_flag_and_subcommand() {
        for document in DOCUMENTS {
            let missing = undocumented(&read(document));
            assert!(missing.is_empty(), "{document}:\n{}", missing.join("\n"));
        }
    }

    fn undocumented(text: &str) -> Vec<String> {
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
        let mut all = BTreeMap::new();
        flags(&Cli::command(), &mut all);
        let mut missing = Vec::new();
        for (long, env) in &all {
            let flag = format!("`--{long}`");
            let in_subcommand_row =
                |r: &&str| r.starts_with("| `api ") && r.contains(&format!("--{long} "));
            let row = rows.iter().find(|r| r.starts_with(&format!("| {flag} ")));
            match (row, env) {
                (Some(row), Some(env)) if !row.contains(&format!("`{env}`")) => {
                    missing.push(format!("{flag}: its row does not name `{env}`"))
                }
                (Some(_), _) => {}
                (None, _) if rows.iter().any(in_subcommand_row) => {}
                (None, _) => missing.push(format!("{flag} has no row")),
            }
        }
        let mut commands = Vec::new();
        subcommands(&Cli::command(), "", &mut commands);
        for command in commands {
            if !rows
                .iter()
                .any(|r| r.starts_with(&format!("| `api {command}")))
            {
                missing.push(format!("`api {command}` has no row"));
            }
        }
        missing
    }
}
