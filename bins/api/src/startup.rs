//! Opening storage and the vault, building the gateway, and waiting for shutdown signals.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use tessera_domain::{proxy::DestinationPolicy, Vault};
use tessera_http::{gateway::ClientConfig, Gateway, GatewayConfig, Metrics};
use tessera_storage::{Database, DatabaseUrl, DetachedStore, PoolOptions};
use tessera_transform_runtime::{EngineConfig, TransformEngine};

use crate::{
    cli::{DbArgs, GatewayArgs},
    master_key,
};

/// Opens the pool and applies pending migrations.
pub async fn open_database(db: &DbArgs) -> anyhow::Result<(Database, DatabaseUrl)> {
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
pub async fn open_vault(db: &DbArgs) -> anyhow::Result<Vault> {
    // The key first: a missing key is a configuration error worth reporting before any I/O.
    let url: DatabaseUrl = db.database_url.parse().context("--database-url")?;
    let master = master_key::load(db, &url)?;
    let previous = master_key::load_previous(db)?;
    let (database, _) = open_database(db).await?;
    let vault = Vault::with_master_keys(Arc::new(DetachedStore::new(database)), master, previous);
    vault.verify_master_key().await.context(
        "the master key does not open the data in this database (wrong TESSERA_MASTER_KEY or key file?)",
    )?;
    let sealed = vault
        .seal_legacy_proxies()
        .await
        .context("sealing the keys and code of proxies written by an earlier release")?;
    if sealed > 0 {
        tracing::info!(
            sealed,
            "sealed the keys and transform code of proxies written by an earlier release"
        );
    }
    Ok(vault)
}

/// Applies the destination policy to `vault` and builds the gateway over it.
pub fn gateway(vault: Vault, args: &GatewayArgs) -> anyhow::Result<(Vault, Arc<Gateway>)> {
    args.validate()?;
    let vault = vault
        .with_destination_policy(DestinationPolicy {
            allow_private_destinations: args.allow_private_destinations,
        })
        .with_cache_ttl(Duration::from_secs_f64(args.cache_ttl));
    let config = GatewayConfig {
        max_body_bytes: args.max_body_bytes,
        max_tokens: args.max_tokens_per_request,
        max_rendered_bytes: args.max_rendered_bytes,
        client: ClientConfig {
            allow_private_destinations: args.allow_private_destinations,
            extra_ca_file: args.destination_ca_file.clone(),
            destination_timeout: Duration::from_secs_f64(args.destination_timeout),
            ..ClientConfig::default()
        },
    };
    let engine = TransformEngine::new(EngineConfig {
        time_limit: Duration::from_secs_f64(args.transform_timeout),
        memory_limit: args.transform_memory_mb.max(1) * 1024 * 1024,
        ..EngineConfig::default()
    })
    .context("starting the transform engine")?;
    let mut gateway = Gateway::new(vault.clone(), config, Arc::new(Metrics::new()))
        .context("building the gateway")?
        .with_transforms(engine);
    if let Some(limit) = args.rate_limit()? {
        gateway = gateway.with_rate_limit(limit);
    }
    Ok((vault, Arc::new(gateway)))
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

/// Runs `main` on a multi-threaded runtime; errors print as one line and exit 1.
pub fn run_main<F>(main: impl FnOnce() -> F) -> std::process::ExitCode
where
    F: std::future::Future<Output = anyhow::Result<()>>,
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
            // One line, the whole cause chain, no backtrace.
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
