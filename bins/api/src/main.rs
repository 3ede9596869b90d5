//! `api`: the Tessera management API server (also serving `/proxy` unless `--no-gateway`) and
//! its administrative commands.
//!
//! Thin by design: parse configuration, open storage, wire the vault into the management app
//! and the gateway, run.

mod bootstrap;
mod cli;
mod data_keys;
mod dev_echo;
mod webhooks;

use std::{process::ExitCode, sync::Arc};

use anyhow::Context;
use tessera_http::{ApiConfig, ApiState, ProcessMetrics};
use tessera_startup::{open_database, open_vault, telemetry};

use bootstrap::{bootstrap, tenant_json};
use cli::{AuditCommand, Cli, Command, ConfigCommand, ServeArgs, TenantsCommand};

/// This build's version and commit, as `--version` prints them.
pub(crate) const VERSION: &str = concat!(
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
    let cli: Cli = tessera_startup::parse_args();
    tessera_startup::run_main(|| run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command.unwrap_or(Command::Serve(Box::new(cli.serve))) {
        Command::Serve(args) => serve(*args).await,
        Command::Migrate(args) => migrate(args).await,
        Command::RotateMasterKey(db) => {
            let vault = open_recording(&db).await?;
            let report = vault
                .rotate_master_key()
                .await
                .context("rotating the master key (tenants already re-wrapped stay so; run again)");
            vault.audit().flush().await;
            let report = report?;
            println!(
                "{}",
                serde_json::json!({
                    "rewrapped": report.rewrapped,
                    "already_current": report.already_current,
                    "changed_concurrently": report.changed_concurrently,
                })
            );
            if report.changed_concurrently > 0 {
                anyhow::bail!("some tenants changed while rotating (another rotation?): run again");
            }
            Ok(())
        }
        Command::Audit {
            command: AuditCommand::Verify { tenant, db },
        } => {
            telemetry::init(db.log_format);
            let (database, _) = open_database(&db).await?;
            let report = tessera_audit::verify(&database, tenant)
                .await
                .context("reading the audit trail")?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            match &report.broken {
                None => Ok(()),
                Some(broken) => anyhow::bail!(
                    "the audit trail is broken at position {} of tenant {}: {}",
                    broken.seq,
                    broken
                        .tenant_id
                        .map_or_else(|| "(none)".to_string(), |t| t.to_string()),
                    broken.problem
                ),
            }
        }
        Command::Import(args) => import(args).await,
        Command::Config {
            command: ConfigCommand::Check { file },
        } => {
            use clap::CommandFactory;
            let text = tessera_startup::config_file::check(
                Cli::command(),
                Some("serve"),
                &file,
                tessera_startup::shown_setting,
            )?;
            print!("{text}");
            Ok(())
        }
        Command::Openapi => {
            print!("{}", tessera_http::openapi::json());
            Ok(())
        }
        Command::Tenants {
            command: TenantsCommand::Delete { id, db },
        } => delete_tenant(id, db).await,
        Command::DataKeys { command } => data_keys::run(command).await,
        Command::Webhooks { command } => webhooks::run(command).await,
        Command::Tenants {
            command: TenantsCommand::Create { name, db },
        } => {
            telemetry::init(db.log_format);
            let vault = open_vault(&db).await?.vault;
            let created = vault
                .create_tenant(&name)
                .await
                .context("creating the tenant")?;
            println!("{}", tenant_json(&created)?);
            Ok(())
        }
    }
}

/// The vault of an operator's command, recording its events with the default trail (sync, no
/// stream): each step is committed to the audit chain as it happens.
pub(crate) async fn open_recording(
    db: &tessera_startup::DbArgs,
) -> anyhow::Result<tessera_domain::Vault> {
    telemetry::init(db.log_format);
    let opened = open_vault(db).await?;
    Ok(tessera_startup::audit::start_audit(
        opened.vault,
        opened.audit_store,
        &tessera_startup::audit::AuditArgs::default(),
    )?)
}

/// `api tenants delete ID`: the tenant's keys, then its rows, each step committed to the
/// deployment's audit chain as it happens (the default trail: sync, no stream).
async fn delete_tenant(
    id: tessera_domain::TenantId,
    db: tessera_startup::DbArgs,
) -> anyhow::Result<()> {
    let vault = open_recording(&db).await?;
    let deleted = vault
        .delete_tenant(id)
        .await
        .context("deleting the tenant (run again to finish)");
    vault.audit().flush().await;
    let deleted = deleted?;
    println!(
        "{}",
        serde_json::json!({
            "tenant_id": deleted.tenant_id,
            "keys_destroyed_now": deleted.keys_destroyed_now,
            "deleted": true,
        })
    );
    Ok(())
}

/// `api migrate`: applies pending migrations (whatever `--no-migrate` says), or with
/// `--status` lists them and changes nothing.
async fn migrate(mut args: cli::MigrateArgs) -> anyhow::Result<()> {
    telemetry::init(args.db.log_format);
    if !args.status {
        args.db.no_migrate = false;
        open_database(&args.db).await?;
        println!("migrations applied");
        return Ok(());
    }
    let (database, _) = tessera_startup::connect_database(&args.db).await?;
    let status = database
        .schema_status()
        .await
        .context("reading the schema's migrations")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(());
    }
    println!("{:<16}{:<36}state", "version", "name");
    for entry in &status {
        let state = match entry.state {
            tessera_startup::MigrationState::Applied => "applied",
            tessera_startup::MigrationState::Pending => "pending",
            tessera_startup::MigrationState::Unknown => "applied by a newer release",
        };
        println!("{:<16}{:<36}{state}", entry.version, entry.name);
    }
    Ok(())
}

/// `api import`: prints the summary; an error when rows were refused, so that scripts see it.
async fn import(args: cli::ImportArgs) -> anyhow::Result<()> {
    let summary = tessera_import::run(tessera_import::ImportConfig {
        file: args.file,
        url: args.url,
        api_key: args.api_key,
        ca_file: args.ca_file,
        header_prefix: args.header_prefix,
        workers: args.concurrency,
        batch_size: args.batch_size,
        progress: tessera_import::stderr_is_terminal(),
    })
    .await;
    let summary = match summary {
        Ok(summary) => summary,
        Err(stopped) => {
            // What was done until the stop is stored: say it, then why it stopped.
            println!("{}", serde_json::to_string_pretty(&stopped.summary)?);
            return Err(stopped.error.into());
        }
    };
    println!("{}", serde_json::to_string_pretty(&summary)?);
    if summary.refused > 0 {
        anyhow::bail!(
            "{} rows were refused (listed in the summary)",
            summary.refused
        );
    }
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    telemetry::init(args.db.log_format);
    args.gateway.validate()?;
    let plan = Plan::new(&args)?;
    // Every port is bound before the database is touched: a taken one stops start-up before
    // a database, a key or a tenant is created (docs/operations.md, "Start-up").
    let sockets = Sockets::bind(&args, &plan)?;
    let tessera_startup::Opened {
        vault,
        audit_store,
        database,
    } = open_vault(&args.db).await?;
    if !args.no_bootstrap {
        bootstrap(&vault, &args.db.data_dir).await?;
    }
    let vault = tessera_startup::audit::start_audit(
        args.gateway.apply_to(vault),
        audit_store,
        &args.audit,
    )?;
    webhooks::check_fed(&vault, &database).await?;
    let sockets = sockets.listen()?;
    let _sweeper = tessera_startup::spawn_sweeper(vault.clone(), args.db.sweep_interval());
    let metrics = ProcessMetrics::new();
    let deliverer = webhooks::start(&args, &vault, &database, &metrics.registry)?;
    let data_keys = tessera_startup::data_key_metrics::DataKeyMetrics::default();
    data_keys.spawn(database.clone());
    metrics.registry.register(Arc::new(data_keys));
    metrics
        .registry
        .register(Arc::new(tessera_startup::pool_metrics::PoolMetrics(
            database,
        )));
    let mut unsafe_settings = args.gateway.unsafe_settings();
    if sockets.echo.is_some() {
        unsafe_settings.push(dev_echo::setting());
    }
    tessera_service::unsafe_settings::announce(unsafe_settings, &metrics.registry);
    let console = plan
        .console
        .map(|config| tessera_console::Console::new(vault.clone(), config));
    // The API lets every public key call from the fields' own origin.
    let frame_origin = plan.elements.as_ref().map(|(_, origin)| origin.clone());
    let elements = plan
        .elements
        .map(|(config, _)| tessera_elements::Elements::new(vault.clone(), config));
    let state = api_state(
        &args,
        frame_origin,
        plan.public_limit,
        vault.clone(),
        metrics,
    )?;
    let mut server = actix_web::HttpServer::new(move || tessera_http::app(state.clone()))
        .shutdown_timeout(30)
        // actix treats SIGINT as an immediate stop; both SIGTERM and SIGINT drain here instead.
        .disable_signals()
        .listen(sockets.api)?;
    if let Some(workers) = args.workers {
        server = server.workers(workers);
    }
    let _pruner = console
        .as_ref()
        .map(|c| c.spawn_pruner(std::time::Duration::from_secs(60)));
    let console_server = sockets
        .console
        .map(|listener| console_server(console, elements, listener))
        .transpose()?;
    let echo_server = sockets.echo.map(dev_echo::server).transpose()?;
    tracing::info!(
        listen = %args.listen,
        database = %args.db.database_url_display(),
        gateway = !args.no_gateway,
        console = console_server.as_ref().map(|_| args.console.console_listen.to_string()),
        dev_echo = args.dev_echo.map(|a| a.to_string()),
        "tessera api listening"
    );
    let servers: Vec<_> = std::iter::once(server.run())
        .chain(console_server)
        .chain(echo_server)
        .collect();
    let served = run_until_stopped(servers).await;
    // Async mode: commit what is still queued before the process ends, even when a server
    // failed; then let deliveries in flight finish, within bounds.
    vault.audit().flush().await;
    if let Some(running) = deliverer {
        running.stop(webhooks::stop_within(&args)).await;
    }
    served?;
    tracing::info!("shut down cleanly");
    Ok(())
}

/// What `serve` will run, decided from its flags alone (before anything is opened).
struct Plan {
    /// The console's settings, unless `--no-console`.
    console: Option<tessera_console::ConsoleConfig>,
    /// The hosted fields' settings and their origin, when they are served (on the console's
    /// listener).
    elements: Option<(
        tessera_elements::ElementsConfig,
        tessera_domain::origin::Origin,
    )>,
    /// The public keys' own rate limit.
    public_limit: tessera_http::browser::RateLimit,
}

impl Plan {
    fn new(args: &ServeArgs) -> anyhow::Result<Self> {
        let public_limit = tessera_http::browser::RateLimit::new(
            args.public_rate_limit,
            args.public_rate_limit_burst,
        )
        .context("--public-rate-limit must be a positive number of requests per second")?;
        let console =
            args.console
                .config(args.listen, !args.no_gateway, args.gateway.max_body_bytes);
        // The fields live on the console's listener: with `--no-console` it is not opened.
        let elements = console.as_ref().and_then(|_| {
            args.elements.setup(
                args.listen,
                args.console.console_listen,
                args.gateway.header_prefix.api_key.as_str(),
            )
        });
        if (console.is_some() || elements.is_some()) && args.console.console_listen == args.listen {
            anyhow::bail!(
                "--console-listen must differ from --listen: the console never shares an origin with /proxy"
            );
        }
        if let Some(addr) = args.dev_echo {
            dev_echo::check(addr)?;
        }
        Ok(Self {
            console,
            elements,
            public_limit,
        })
    }
}

/// The sockets of `serve`: bound first, listening once the vault is open.
struct Sockets<S> {
    api: S,
    console: Option<S>,
    echo: Option<S>,
}

impl Sockets<tessera_startup::listener::Bound> {
    fn bind(args: &ServeArgs, plan: &Plan) -> anyhow::Result<Self> {
        use tessera_startup::listener::bind;
        let api = bind(args.listen, "choose another with --listen")?;
        let console = (plan.console.is_some() || plan.elements.is_some())
            .then(|| {
                bind(
                    args.console.console_listen,
                    "the console's; choose another with --console-listen, or --no-console",
                )
            })
            .transpose()?;
        let echo = args
            .dev_echo
            .map(|addr| bind(addr, "the echo's; choose another with --dev-echo"))
            .transpose()?;
        Ok(Self { api, console, echo })
    }

    /// Every socket listening.
    fn listen(self) -> anyhow::Result<Sockets<std::net::TcpListener>> {
        Ok(Sockets {
            api: self.api.listen()?,
            console: self.console.map(|s| s.listen()).transpose()?,
            echo: self.echo.map(|s| s.listen()).transpose()?,
        })
    }
}

/// The management API's state: the vault, the gateway mounted at `/proxy` (unless
/// `--no-gateway`), the rate limits and the browsers' rules.
fn api_state(
    args: &ServeArgs,
    frame_origin: Option<tessera_domain::origin::Origin>,
    public_limit: tessera_http::browser::RateLimit,
    vault: tessera_domain::Vault,
    metrics: ProcessMetrics,
) -> anyhow::Result<ApiState> {
    let mut state = ApiState::new(
        vault.clone(),
        ApiConfig {
            max_body_bytes: args.gateway.max_body_bytes,
            names: args.gateway.header_prefix.clone(),
        },
        metrics.clone(),
    );
    if !args.no_gateway {
        let gateway = args
            .gateway
            .build(vault, &metrics.registry, metrics.requests.clone())?;
        state = state.with_proxy(Arc::new(gateway));
    }
    if let Some(limit) = args.gateway.rate_limit()? {
        state = state.with_rate_limit(limit);
    }
    Ok(state.with_browsers(
        tessera_http::browser::Browsers::new(frame_origin, public_limit)
            .with_trusted_proxies(args.trusted_proxies.clone()),
    ))
}

/// Runs `servers` until SIGTERM or SIGINT, then lets each drain its in-flight requests.
async fn run_until_stopped(servers: Vec<actix_web::dev::Server>) -> anyhow::Result<()> {
    let handles: Vec<_> = servers.iter().map(|s| s.handle()).collect();
    tokio::spawn(async move {
        tessera_startup::shutdown_signal().await;
        tracing::info!("shutdown requested; draining in-flight requests (up to 30 s)");
        futures_util::future::join_all(handles.iter().map(|h| h.stop(true))).await;
    });
    futures_util::future::try_join_all(servers)
        .await
        .context("the HTTP server failed")?;
    Ok(())
}

/// The console's own server on `listener`: it serves the console and nothing else, so no
/// answer chosen by a tenant or a destination ever comes from its origin (docs/console.md).
fn console_server(
    console: Option<tessera_console::Console>,
    elements: Option<tessera_elements::Elements>,
    listener: std::net::TcpListener,
) -> anyhow::Result<actix_web::dev::Server> {
    Ok(actix_web::HttpServer::new(move || {
        let (console, elements) = (console.clone(), elements.clone());
        actix_web::App::new()
            .configure(move |cfg| {
                if let Some(elements) = elements {
                    elements.configure(cfg);
                }
            })
            .configure(move |cfg| {
                if let Some(console) = console {
                    console.configure(cfg);
                }
            })
    })
    .shutdown_timeout(30)
    .disable_signals()
    .workers(2)
    .listen(listener)
    .context("the console's listener")?
    .run())
}
