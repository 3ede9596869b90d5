//! The kinds of token.

use serde::{Deserialize, Serialize};

use crate::container::Container;

/// The kind of value a token holds; it decides validation and the default container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TokenType {
    /// Any JSON value.
    Token,
    /// A payment card (`number`, `expiration_month`, `expiration_year`, `cvc`).
    Card,
    /// A US bank account (`routing_number`, `account_number`).
    Bank,
}

impl TokenType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenType::Token => "token",
            TokenType::Card => "card",
            TokenType::Bank => "bank",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "token" => Some(TokenType::Token),
            "card" => Some(TokenType::Card),
            "bank" => Some(TokenType::Bank),
            _ => None,
        }
    }

    /// Where a token of this type lives when the caller names no container.
    pub fn default_container(self) -> Container {
        let path = match self {
            TokenType::Token => "/general/high/",
            TokenType::Card => "/pci/high/",
            TokenType::Bank => "/bank/high/",
        };
        Container::parse(path).unwrap_or_else(|_| Container::root())
    }
}
