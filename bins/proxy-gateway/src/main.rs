//! `proxy-gateway`: serves only `/proxy` (plus `/healthz`, `/readyz`, `/metrics`) with hyper on
//! the multi-threaded runtime, so all cores share one outbound connection pool. Stateless: run
//! as many as needed against the same database.

use std::{net::SocketAddr, process::ExitCode};

use anyhow::Context;
use clap::Parser;
use tessera_api::{
    cli::{DbArgs, GatewayArgs},
    startup, telemetry,
};

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
    /// Worker threads, each with its own runtime and outbound pool (default: one per core).
    #[arg(long, env = "TESSERA_WORKERS")]
    workers: Option<usize>,
}

/// mimalloc: measurably cheaper than the system allocator on the gateway's hot path.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Args = startup::parse_args();
    startup::run_main(|| run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    telemetry::init(args.db.log_format);
    args.gateway.validate()?;
    let vault = startup::open_vault(&args.db).await?;
    let (_, gateway) = startup::gateway(vault, &args.gateway)?;
    let listener = std::net::TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    tracing::info!(listen = %args.listen, workers, database = %args.db.database_url_display(), "tessera proxy-gateway listening");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let server = tokio::task::spawn_blocking(move || {
        tessera_http::gateway::serve_per_core(listener, &gateway, workers, stopped)
    });
    startup::shutdown_signal().await;
    tracing::info!("shutdown requested; draining in-flight requests (up to 30 s)");
    let _ = stop.send(true);
    server
        .await
        .context("the gateway server task failed")?
        .context("the gateway server failed")?;
    tracing::info!("shut down cleanly");
    Ok(())
}
