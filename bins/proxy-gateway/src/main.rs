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
}

fn main() -> ExitCode {
    let args = Args::parse();
    startup::run_main(|| run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    telemetry::init(args.db.log_format);
    let vault = startup::open_vault(&args.db).await?;
    let (_, gateway) = startup::gateway(vault, &args.gateway)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    tracing::info!(listen = %args.listen, database = %args.db.database_url_display(), "tessera proxy-gateway listening");
    tessera_http::gateway::serve(listener, gateway, startup::shutdown_signal())
        .await
        .context("the gateway server failed")?;
    tracing::info!("shut down cleanly");
    Ok(())
}
