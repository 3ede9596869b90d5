//! # tessera-console
//!
//! The web console for tenants, served by `api` at `/console`: server-rendered HTML (maud, so
//! every value is escaped unless a template says otherwise) with a little progressive
//! JavaScript, and its stylesheet and script compiled into the binary. Nothing is fetched from
//! another host.
//!
//! ```text
//!   browser ─► security middleware (request id, CSP and friends on every answer)
//!           ─► route ─► Ctx (session cookie → API key held here → Vault::authenticate)
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
mod mask;
mod routes;
mod security;
mod session;
mod views;

use actix_web::{middleware::from_fn, web};
use tessera_domain::Vault;

pub use config::{ConsoleArgs, ConsoleConfig, DEFAULT_SESSION_TTL_SECS, MAX_SESSION_AGE};
pub use security::{CONTENT_SECURITY_POLICY, SECURITY_HEADERS};

/// Where the console is mounted.
pub const MOUNT: &str = "/console";

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "tessera_console";

/// The cookie that carries the sign-in form's CSRF token before a session exists.
pub const SIGN_IN_COOKIE: &str = "tessera_console_signin";

/// What every console handler shares.
pub(crate) struct State {
    pub(crate) vault: Vault,
    pub(crate) config: ConsoleConfig,
    pub(crate) sessions: session::SessionStore,
    pub(crate) gateway: Option<gateway_client::GatewayClient>,
}

/// The console: its state (sessions included) shared by every worker of the server.
#[derive(Clone)]
pub struct Console {
    state: web::Data<State>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("config", &self.state.config)
            .field("sessions", &self.state.sessions)
            .finish_non_exhaustive()
    }
}

impl Console {
    /// A console over `vault` with `config` and no session yet. Build it once per process
    /// (outside `HttpServer::new`) so that every worker shares the sessions.
    pub fn new(vault: Vault, config: ConsoleConfig) -> Self {
        let sessions = session::SessionStore::new(config.session_idle, config.session_max_age);
        let gateway = config
            .gateway_url
            .as_deref()
            .map(gateway_client::GatewayClient::new);
        Self {
            state: web::Data::new(State {
                vault,
                config,
                sessions,
                gateway,
            }),
        }
    }

    /// Registers the console's routes under [`MOUNT`].
    pub fn configure(&self, cfg: &mut web::ServiceConfig) {
        cfg.service(
            routes::scope(web::scope(MOUNT))
                .app_data(self.state.clone())
                .wrap(from_fn(security::middleware)),
        );
    }

    /// Sessions held now (for tests and operators' curiosity; never their contents).
    pub fn live_sessions(&self) -> usize {
        self.state.sessions.len()
    }
}
