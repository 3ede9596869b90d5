//! What a token's page shows of its data before Reveal: at most the last four digits of a card
//! or account number (what PCI DSS allows on screen, and what the gateway's `last4` filter
//! gives), every other value replaced by dots. The masked view is built from the decrypted
//! data in the server; only this view reaches the page.

use serde_json::Value;
use tessera_domain::TokenType;

/// One masked line: the field's name and what is shown of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MaskedField {
    pub(crate) name: String,
    pub(crate) shown: String,
}

const DOTS: &str = "••••";

fn last4(value: &Value) -> String {
    let digits: Vec<char> = value
        .as_str()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    if digits.len() < 8 {
        // Too short to show any part of without giving most of it away.
        return DOTS.to_string();
    }
    let tail: String = digits[digits.len() - 4..].iter().collect();
    format!("{DOTS} {tail}")
}

/// The one-line mask of a token in a list: the last four digits of a card's number or a
/// bank account's number, or of a number held alone (a card number, an SSN, an EIN, a bank
/// account or routing number; dots when it is short); `None` for other tokens, whose data is
/// never summarised.
pub(crate) fn summary(token_type: TokenType, data: &Value) -> Option<String> {
    match number_field(token_type)? {
        Number::Field(field) => Some(last4(data.get(field).unwrap_or(&Value::Null))),
        Number::Whole => Some(last4(data)),
    }
}

/// Where a token type's number is, whose last four digits may be shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    /// In this field of the data.
    Field(&'static str),
    /// The data itself.
    Whole,
}

/// Where a token type's number is: a card's number, a bank account's number, the whole data of
/// the types that hold one number; none for other tokens.
fn number_field(token_type: TokenType) -> Option<Number> {
    match token_type {
        TokenType::Card => Some(Number::Field("number")),
        TokenType::Bank => Some(Number::Field("account_number")),
        TokenType::Token => None,
        TokenType::CardNumber
        | TokenType::SocialSecurityNumber
        | TokenType::EmployerIdNumber
        | TokenType::UsBankAccountNumber
        | TokenType::UsBankRoutingNumber => Some(Number::Whole),
    }
}

/// The masked view of `data`, a token of `token_type`.
pub(crate) fn mask(token_type: TokenType, data: &Value) -> Vec<MaskedField> {
    let field = |name: &str, shown: String| MaskedField {
        name: name.to_string(),
        shown,
    };
    if number_field(token_type) == Some(Number::Whole) {
        return vec![field("data", last4(data))];
    }
    let Some(object) = data.as_object().filter(|_| token_type != TokenType::Token) else {
        return vec![field(
            "data",
            format!("{DOTS}{DOTS} (hidden until revealed)"),
        )];
    };
    object
        .iter()
        .map(|(name, value)| {
            if matches!(number_field(token_type), Some(Number::Field(f)) if f == name) {
                field(name, last4(value))
            } else {
                field(name, DOTS.to_string())
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_card_shows_its_last_four_digits_only() {
        let data = json!({"number": "4242424242424242", "cvc": "123",
                          "expiration_month": 12, "expiration_year": 2030});
        let shown = mask(TokenType::Card, &data);
        let all: String = shown.iter().map(|f| f.shown.clone()).collect();
        assert!(all.contains("4242") && !all.contains("424242"));
        assert!(!all.contains("123") && !all.contains("2030") && !all.contains("12"));
        assert_eq!(shown.len(), 4);
    }

    #[test]
    fn a_summary_is_four_digits_at_most() {
        let card = json!({"number": "4242424242424242", "cvc": "123"});
        assert_eq!(
            summary(TokenType::Card, &card).as_deref(),
            Some("•••• 4242")
        );
        let bank = json!({"routing_number": "011000015", "account_number": "000123456789"});
        assert_eq!(
            summary(TokenType::Bank, &bank).as_deref(),
            Some("•••• 6789")
        );
        assert_eq!(
            summary(TokenType::Card, &json!({"number": "4242"})).as_deref(),
            Some(DOTS)
        );
        assert_eq!(summary(TokenType::Card, &json!("x")).as_deref(), Some(DOTS));
        assert_eq!(summary(TokenType::Token, &json!("4242424242424242")), None);
    }

    #[test]
    fn bank_and_generic_tokens() {
        let bank = mask(
            TokenType::Bank,
            &json!({"routing_number": "011000015", "account_number": "000123456789"}),
        );
        let shown = |name: &str| {
            bank.iter()
                .find(|f| f.name == name)
                .map(|f| f.shown.clone())
        };
        assert_eq!(shown("account_number").as_deref(), Some("•••• 6789"));
        assert_eq!(
            shown("routing_number").as_deref(),
            Some(DOTS),
            "routing number hidden"
        );
        let generic = mask(TokenType::Token, &json!({"ssn": "078-05-1120"}));
        assert_eq!(generic.len(), 1);
        assert!(!generic[0].shown.contains("1120"));
        assert_eq!(
            mask(TokenType::Card, &json!({"number": "4242"}))[0].shown,
            DOTS
        );
    }
}
