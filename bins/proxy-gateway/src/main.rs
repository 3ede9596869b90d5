//! `proxy-gateway`: serves only `/proxy` (plus `/healthz`, `/readyz`, `/metrics`) with hyper,
//! one worker thread, listening socket, runtime and outbound pool per core. Stateless: run as
//! many as needed against the same database.

use std::{net::SocketAddr, process::ExitCode};

use anyhow::Context;
use clap::Parser;
use tessera_gateway::{server, GatewayArgs};
use tessera_service::metrics::{AuditMetrics, Registry, RequestCounter};
use tessera_startup::{audit::AuditArgs, telemetry, DbArgs};

/// Tessera proxy gateway.
#[derive(Debug, Parser)]
#[command(name = "proxy-gateway", version = VERSION)]
struct Args {
    /// `--config FILE` (read before parsing: see `tessera_startup::parse_args`).
    #[command(flatten)]
    _config: tessera_startup::config_file::ConfigFlag,
    /// Validate the configuration (the file, the environment and the flags), print the
    /// effective settings (secrets redacted) and exit.
    #[arg(long)]
    check_config: bool,
    /// Address to listen on.
    #[arg(long, env = "TESSERA_LISTEN", default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    /// Database flags.
    #[command(flatten)]
    db: DbArgs,
    /// Gateway flags.
    #[command(flatten)]
    gateway: GatewayArgs,
    /// Audit-trail flags.
    #[command(flatten)]
    audit: AuditArgs,
    /// Worker threads, each with its own listening socket, runtime and outbound pool (default:
    /// one per core).
    #[arg(long, env = "TESSERA_WORKERS")]
    workers: Option<usize>,
}

/// This build's version and commit, as `--version` prints them.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TESSERA_BUILD_COMMIT"),
    ")"
);

/// mimalloc: measurably cheaper than the system allocator on the gateway's hot path.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tessera_startup::enter_sandbox_if_asked();
    tessera_service::build_info::install(tessera_service::build_info::BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("TESSERA_BUILD_COMMIT"),
    });
    let args: Args = tessera_startup::parse_args();
    if args.check_config {
        return check_config();
    }
    tessera_startup::run_main(|| run(args))
}

/// `--check-config`: the effective settings, each with where it came from.
fn check_config() -> ExitCode {
    use clap::CommandFactory;
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let (file, argv) = tessera_startup::config_file::take_flag(&argv);
    match tessera_startup::config_file::effective_of_command_line(
        Args::command(),
        &argv,
        file.as_deref(),
        tessera_startup::shown_setting,
    ) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    telemetry::init(args.db.log_format);
    args.gateway.validate()?;
    let opened = tessera_startup::open_vault(&args.db).await?;
    let vault = tessera_startup::audit::start_audit(opened.vault, opened.audit_store, &args.audit)?;
    let _sweeper = tessera_startup::spawn_sweeper(vault.clone(), args.db.sweep_interval());
    let audit = vault.clone();
    let registry = Registry::new();
    let requests = std::sync::Arc::new(RequestCounter::new());
    registry.register(requests.clone());
    registry.register(std::sync::Arc::new(
        tessera_service::build_info::BuildInfoMetric,
    ));
    registry.register(std::sync::Arc::new(
        tessera_startup::pool_metrics::PoolMetrics(opened.database),
    ));
    if vault.audit().is_on() {
        registry.register(std::sync::Arc::new(AuditMetrics(vault.audit().clone())));
    }
    let gateway = args
        .gateway
        .build(args.gateway.apply_to(vault), &registry, requests)?;
    tessera_service::unsafe_settings::announce(args.gateway.unsafe_settings(), &registry);
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Bound once the vault is open: the sockets share the port with SO_REUSEPORT, so binding
    // early would hand part of a running instance's connections to one still starting.
    let listeners = server::bind(args.listen, workers)?;
    tracing::info!(listen = %args.listen, workers, database = %args.db.database_url_display(), "tessera proxy-gateway listening");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let served = server::Served { registry };
    let serving = tokio::task::spawn_blocking(move || {
        server::serve_per_core(listeners, &gateway, served, stopped)
    });
    tessera_startup::shutdown_signal().await;
    tracing::info!("shutdown requested; draining in-flight requests (up to 30 s)");
    let _ = stop.send(true);
    let served = serving.await;
    // Async mode: commit what is still queued before the process ends.
    audit.audit().flush().await;
    served
        .context("the gateway server task failed")?
        .context("the gateway server failed")?;
    tracing::info!("shut down cleanly");
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every flag of the gateway has a row in docs/operations.md's configuration table (the
    /// keys of its configuration file are these flags), naming its environment variable.
    #[test]
    fn the_operators_guide_documents_every_flag() {
        let guide = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/operations.md"
        ))
        .expect("docs/operations.md");
        let rows: Vec<&str> = guide.lines().filter(|l| l.starts_with("| `--")).collect();
        let mut missing = Vec::new();
        for arg in super::Args::command().get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if arg.is_hide_set() || long == "help" || long == "version" {
                continue;
            }
            let row = rows
                .iter()
                .find(|r| r.starts_with(&format!("| `--{long}` ")));
            match (row, arg.get_env()) {
                (None, _) => missing.push(format!("--{long} has no row")),
                (Some(row), Some(env))
                    if !row.contains(&format!("`{}`", env.to_string_lossy())) =>
                {
                    missing.push(format!("--{long}: its row does not name its variable"))
                }
                (Some(_), _) => {}
            }
        }
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }

    /// `--check-config` validates a configuration file and shows where each setting came from,
    /// the database password hidden.
    #[test]
    fn check_config_shows_the_effective_settings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("gw.toml");
        std::fs::write(
            &file,
            "database_url = \"postgres://gw:s3cret@db/t?sslmode=verify-full\"\nworkers = 3\n",
        )
        .expect("write");
        let argv: Vec<std::ffi::OsString> =
            ["proxy-gateway", "--check-config", "--listen", "127.0.0.1:9"]
                .iter()
                .map(Into::into)
                .collect();
        let text = tessera_startup::config_file::effective_of_command_line(
            super::Args::command(),
            &argv,
            Some(&file),
            tessera_startup::shown_setting,
        )
        .expect("valid");
        assert!(text.contains("workers = 3"), "{text}");
        assert!(text.contains("gw:***@db"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("listen = \"127.0.0.1:9\"") && l.ends_with("# flag")),
            "{text}"
        );
    }
}
