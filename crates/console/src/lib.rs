//! # tessera-console
//!
//! The web console for tenants, served by `api` at `/console` on a listener of its own (it never
//! shares an origin with `/proxy`, docs/console.md): server-rendered HTML (maud, so
//! every value is escaped unless a template says otherwise) with a little progressive
//! JavaScript, and its stylesheet and script compiled into the binary. Nothing is fetched from
//! another host.
//!
//! ```text
//!   browser ─► security middleware (request id, CSP and friends on every answer)
//!           ─► route ─► Ctx (one session cookie → Vault::console_session: the stored
//!                        session, its application read by key hash, never cached)
//!                    ─► Posted (+ form body + CSRF token check) for every POST
//!           ─► Vault use-case, as the signed-in application ─► audit events (as the API's)
//!           ─► page (maud)
//! ```
//!
//! The console acts as the application whose key opened the session, through the same
//! [`tessera_domain::Vault`] use-cases as the management API: it checks no permission itself,
//! and what the key may not do is shown as "Not permitted". Every action the API would record
//! in the audit trail is recorded the same way ([`audit`]); revealing a token's data is a
//! `token.read`. "Try it" sends its request through the real gateway over loopback HTTP
//! ([`gateway_client`]).

mod assets;
mod audit;
mod config;
mod context;
mod error;
mod form;
mod gateway_client;
mod inputs;
mod links;
mod mask;
mod mount;
mod names;
mod recent_tokens;
mod routes;
mod security;
mod session;
mod state;
mod throttle;
mod views;

use actix_web::{middleware::from_fn, web};
use tessera_domain::{vault::SessionLimits, Vault};

pub use config::{
    ConsoleArgs, ConsoleConfig, DEFAULT_CONSOLE_LISTEN, DEFAULT_SESSION_TTL_SECS, MAX_SESSION_AGE,
};
pub use mount::{MOUNT, SESSION_COOKIE, SIGN_IN_COOKIE};
pub use security::{CONTENT_SECURITY_POLICY, SECURITY_HEADERS};
use state::State;

/// The console: its state (sessions included) shared by every worker of the server.
#[derive(Clone)]
pub struct Console {
    state: web::Data<State>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("config", &self.state.config)
            .finish_non_exhaustive()
    }
}

impl Console {
    /// A console over `vault` with `config`. Its sessions are the vault's, stored: every
    /// worker and every replica serves them.
    pub fn new(vault: Vault, config: ConsoleConfig) -> Self {
        let sign_ins = throttle::SignInThrottle::new(config.trusted_proxies.clone());
        let limits = SessionLimits {
            idle: config.session_idle,
            max_age: config.session_max_age,
        };
        let gateway = config
            .gateway_url
            .as_deref()
            .map(gateway_client::GatewayClient::new);
        Self {
            state: web::Data::new(State {
                vault,
                config,
                limits,
                sign_ins,
                gateway,
            }),
        }
    }

    /// Registers the console's routes under [`MOUNT`], and `GET`/`HEAD /` as a redirect there
    /// (a fixed `Location`, never taken from the request). The console's listener serves
    /// nothing else (docs/console.md, "Its own origin").
    pub fn configure(&self, cfg: &mut web::ServiceConfig) {
        cfg.service(
            web::resource("/")
                .route(web::get().to(routes::to_console))
                .route(web::head().to(routes::to_console))
                .wrap(from_fn(security::middleware)),
        );
        cfg.default_service(web::to(security::not_found));
        cfg.service(
            routes::scope(web::scope(MOUNT))
                .app_data(self.state.clone())
                .wrap(from_fn(security::middleware)),
        );
    }

    /// Sessions stored now, of every replica (for tests and operators' curiosity; never their
    /// contents).
    pub async fn stored_sessions(&self) -> u64 {
        self.state
            .vault
            .console_sessions_stored()
            .await
            .unwrap_or_default()
    }

    /// Prunes ended sessions every `every`, on the current tokio runtime, for as long as the
    /// process runs.
    pub fn spawn_pruner(&self, every: std::time::Duration) -> tokio::task::JoinHandle<()> {
        let console = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match console.prune_sessions().await {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(pruned = n, "ended console sessions removed"),
                    Err(e) => tracing::warn!(error = %e, "pruning console sessions failed"),
                }
            }
        })
    }

    /// Removes the sessions that have ended (idle or too old); returns how many. Run on a
    /// schedule ([`Console::spawn_pruner`]) by the process that serves the console.
    pub async fn prune_sessions(&self) -> Result<u64, tessera_domain::VaultError> {
        self.state
            .vault
            .prune_console_sessions(self.state.limits)
            .await
    }
}
