//! The kinds of token.

use serde::{Deserialize, Serialize};

use crate::container::Container;

/// The kind of value a token holds; it decides validation and the default container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TokenType {
    /// Any JSON value.
    Token,
    /// A payment card (`number`, `expiration_month`, `expiration_year`, `cvc`).
    Card,
    /// A US bank account (`routing_number`, `account_number`).
    Bank,
    /// A card number alone: a string of 13–19 digits passing the Luhn check.
    CardNumber,
    /// A US social security number: nine digits, with optional `-` delimiters.
    SocialSecurityNumber,
    /// A US employer identification number: nine digits, with optional `-` delimiters.
    EmployerIdNumber,
    /// A US bank account number alone: a string of 3–17 digits.
    UsBankAccountNumber,
    /// A US bank routing number alone: nine digits passing the ABA checksum.
    UsBankRoutingNumber,
}

impl TokenType {
    /// Every type, in the order the documentation lists them.
    pub const ALL: [TokenType; 8] = [
        TokenType::Token,
        TokenType::Card,
        TokenType::Bank,
        TokenType::CardNumber,
        TokenType::SocialSecurityNumber,
        TokenType::EmployerIdNumber,
        TokenType::UsBankAccountNumber,
        TokenType::UsBankRoutingNumber,
    ];

    /// Every type's name, for messages.
    pub const NAMES: &'static str = "token, card, bank, card_number, social_security_number, \
        employer_id_number, us_bank_account_number, us_bank_routing_number";

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenType::Token => "token",
            TokenType::Card => "card",
            TokenType::Bank => "bank",
            TokenType::CardNumber => "card_number",
            TokenType::SocialSecurityNumber => "social_security_number",
            TokenType::EmployerIdNumber => "employer_id_number",
            TokenType::UsBankAccountNumber => "us_bank_account_number",
            TokenType::UsBankRoutingNumber => "us_bank_routing_number",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Where a token of this type lives when the caller names no container (Basis Theory's
    /// defaults).
    pub fn default_container(self) -> Container {
        let path = match self {
            TokenType::Token => "/general/high/",
            TokenType::Card | TokenType::CardNumber => "/pci/high/",
            TokenType::Bank | TokenType::UsBankAccountNumber => "/bank/high/",
            TokenType::UsBankRoutingNumber => "/bank/low/",
            TokenType::SocialSecurityNumber | TokenType::EmployerIdNumber => "/pii/high/",
        };
        Container::parse(path).unwrap_or_else(|_| Container::root())
    }

    /// The search indexes a token of this type gets when its create names none (Basis
    /// Theory's defaults: the SSN and EIN are indexed as given, without dashes, and by their
    /// last four digits).
    pub fn default_search_indexes(self) -> &'static [&'static str] {
        match self {
            TokenType::SocialSecurityNumber | TokenType::EmployerIdNumber => &[
                "{{ data }}",
                "{{ data | replace: '-' }}",
                "{{ data | last4 }}",
            ],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_list_every_type_and_parse_back() {
        let listed: Vec<&str> = TokenType::NAMES.split(", ").collect();
        let all: Vec<&str> = TokenType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(listed, all);
        for t in TokenType::ALL {
            assert_eq!(TokenType::parse(t.as_str()), Some(t));
            let json = serde_json::to_value(t).expect("json");
            assert_eq!(json, t.as_str(), "serialised as named");
        }
    }
}
