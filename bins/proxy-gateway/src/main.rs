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
#[command(name = "proxy-gateway", version)]
struct Args {
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

/// mimalloc: measurably cheaper than the system allocator on the gateway's hot path.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tessera_startup::enter_sandbox_if_asked();
    let args: Args = tessera_startup::parse_args();
    tessera_startup::run_main(|| run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    telemetry::init(args.db.log_format);
    args.gateway.validate()?;
    let (vault, audit_store) = tessera_startup::open_vault(&args.db).await?;
    let vault = tessera_startup::audit::start_audit(vault, audit_store, &args.audit)?;
    let _sweeper = tessera_startup::spawn_sweeper(vault.clone(), args.db.sweep_interval());
    let audit = vault.clone();
    let registry = Registry::new();
    let requests = std::sync::Arc::new(RequestCounter::new());
    registry.register(requests.clone());
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
