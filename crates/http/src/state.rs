//! What every handler shares.

use tessera_domain::Vault;

/// Tunables of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Largest request body accepted, in bytes (413 above).
    pub max_body_bytes: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: crate::DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// Shared application state: the vault and the HTTP configuration.
#[derive(Debug, Clone)]
pub struct ApiState {
    /// The use-cases.
    pub vault: Vault,
    /// HTTP tunables.
    pub config: ApiConfig,
}

impl ApiState {
    /// State for `vault` with `config`.
    pub fn new(vault: Vault, config: ApiConfig) -> Self {
        Self { vault, config }
    }
}
