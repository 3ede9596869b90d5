//! Why a request to the destination failed, and the gateway error each failure becomes. Its
//! own module: the client ([`crate::client`]) and the SSRF guard ([`crate::ssrf`]) both fail
//! with it.

use crate::error::{ErrorKind, GatewayError};

/// Why a request to the destination failed.
#[derive(Debug)]
pub enum SendError {
    /// The destination resolved to (or is) an address the guard refuses.
    Blocked,
    /// A plain-`http` destination while private destinations are not allowed.
    InsecureScheme,
    /// Connection or TLS failure.
    Unreachable(String),
    /// No response headers within the destination timeout.
    Timeout,
}

impl From<SendError> for GatewayError {
    fn from(e: SendError) -> Self {
        match e {
            SendError::Blocked => {
                GatewayError::new(ErrorKind::Blocked, "destination address not allowed")
            }
            SendError::InsecureScheme => GatewayError::new(
                ErrorKind::Blocked,
                "plain http destinations are not allowed (the gateway runs without --allow-private-destinations)",
            ),
            SendError::Timeout => GatewayError::new(
                ErrorKind::Timeout,
                "the destination did not answer within the destination timeout",
            ),
            SendError::Unreachable(reason) => GatewayError::new(
                ErrorKind::Unreachable,
                format!("the destination could not be reached: {reason}"),
            ),
        }
    }
}
