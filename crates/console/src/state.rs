//! What every console handler shares.

use tessera_domain::{vault::SessionLimits, Vault};

use crate::{config::ConsoleConfig, gateway_client::GatewayClient, throttle::SignInThrottle};

/// What every console handler shares.
pub(crate) struct State {
    pub(crate) vault: Vault,
    pub(crate) config: ConsoleConfig,
    pub(crate) limits: SessionLimits,
    pub(crate) sign_ins: SignInThrottle,
    pub(crate) gateway: Option<GatewayClient>,
}
