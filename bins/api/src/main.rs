//! `api`: the Tessera management API server and its administrative commands.
//!
//! Thin by design: parse configuration, open storage, wire the vault into the HTTP app, run.

mod cli;
mod master_key;
mod secret_file;
mod telemetry;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use serde::Serialize;
use tessera_domain::{proxy::DestinationPolicy, vault::CreatedTenant, Vault};
use tessera_storage::{Database, DatabaseUrl, DetachedStore, PoolOptions};

use cli::{Cli, Command, DbArgs, ServeArgs, TenantsCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, the whole cause chain, no backtrace.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command.unwrap_or(Command::Serve(cli.serve)) {
        Command::Serve(args) => serve(args).await,
        Command::Migrate(db) => {
            telemetry::init(db.log_format);
            open_database(&db).await?;
            println!("migrations applied");
            Ok(())
        }
        Command::Tenants {
            command: TenantsCommand::Create { name, db },
        } => {
            telemetry::init(db.log_format);
            let vault = open_vault(&db).await?;
            let created = vault
                .create_tenant(&name)
                .await
                .context("creating the tenant")?;
            println!("{}", tenant_json(&created)?);
            Ok(())
        }
    }
}

/// Opens the pool and applies pending migrations.
async fn open_database(db: &DbArgs) -> anyhow::Result<(Database, DatabaseUrl)> {
    let url: DatabaseUrl = db.database_url.parse().context("--database-url")?;
    let database = Database::connect(&url, PoolOptions::default_for(&url))
        .await
        .with_context(|| format!("cannot open the database at {url}"))?;
    database
        .migrate()
        .await
        .with_context(|| format!("cannot migrate the database at {url}"))?;
    Ok((database, url))
}

/// Opens the database and builds the vault, checking the master key against existing data.
async fn open_vault(db: &DbArgs) -> anyhow::Result<Vault> {
    // The key first: a missing key is a configuration error worth reporting before any I/O.
    let url: DatabaseUrl = db.database_url.parse().context("--database-url")?;
    let master = master_key::load(db, &url)?;
    let (database, _) = open_database(db).await?;
    let vault = Vault::new(std::sync::Arc::new(DetachedStore::new(database)), master);
    vault
        .verify_master_key()
        .await
        .context("the master key does not open the data in this database (wrong TESSERA_MASTER_KEY or key file?)")?;
    Ok(vault)
}

#[derive(Serialize)]
struct TenantOutput<'a> {
    tenant_id: String,
    application_id: String,
    api_key: &'a str,
}

fn tenant_json(created: &CreatedTenant) -> anyhow::Result<String> {
    Ok(serde_json::to_string(&TenantOutput {
        tenant_id: created.tenant.id.to_string(),
        application_id: created.admin.id.to_string(),
        api_key: created.api_key.expose(),
    })?)
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    telemetry::init(args.db.log_format);
    let vault = open_vault(&args.db).await?;
    if !args.no_bootstrap {
        if let Some(created) = vault
            .bootstrap()
            .await
            .context("bootstrapping the default tenant")?
        {
            // Print first: the tenant exists now, and its key must not be lost if the file
            // cannot be written.
            println!("{}", tenant_json(&created)?);
            let path = args.db.data_dir.join("admin-key");
            match secret_file::replace(&path, created.api_key.expose().as_bytes()) {
                Ok(()) => tracing::warn!(
                    path = %path.display(),
                    "created tenant `default`; its admin API key was printed above and written to the file (mode 0600). It is not shown again."
                ),
                Err(e) => tracing::error!(
                    path = %path.display(),
                    error = %e,
                    "created tenant `default`; its admin API key was printed above but could not be written to the file: keep the printed key"
                ),
            }
        }
    }
    let vault = vault.with_destination_policy(DestinationPolicy {
        allow_private_destinations: args.allow_private_destinations,
    });
    let state = tessera_http::ApiState::new(
        vault,
        tessera_http::ApiConfig {
            max_body_bytes: args.max_body_bytes,
        },
    );
    let mut server = actix_web::HttpServer::new(move || tessera_http::app(state.clone()))
        .shutdown_timeout(30)
        // actix treats SIGINT as an immediate stop; both SIGTERM and SIGINT drain here instead.
        .disable_signals()
        .bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    if let Some(workers) = args.workers {
        server = server.workers(workers);
    }
    tracing::info!(listen = %args.listen, database = %args.db.database_url_display(), "tessera api listening");
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutdown requested; draining in-flight requests (up to 30 s)");
        handle.stop(true).await;
    });
    server.await.context("the HTTP server failed")?;
    tracing::info!("shut down cleanly");
    Ok(())
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal() {
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
