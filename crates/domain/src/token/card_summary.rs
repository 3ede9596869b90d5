//! What may be shown of a card without showing the card: its brand, last four digits and
//! expiry (docs/api.md, "Card display fields"). Never the number, its first digits or the CVC.

use serde::Serialize;
use serde_json::Value;

/// The display fields of a card token, for receipts and "paying with Visa •••• 4242".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CardSummary {
    /// The card network as the number's leading digits say (`visa`, `mastercard`,
    /// `american-express`, `discover`, `diners-club`, `jcb`, `unionpay`), else `unknown`.
    pub brand: &'static str,
    /// The number's last four digits.
    pub last4: String,
    /// Expiry month, 1–12 (absent for a card stored without an expiry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_month: Option<u64>,
    /// Expiry year, four digits (absent with the month).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_year: Option<u64>,
}

impl CardSummary {
    /// The summary of a card token's (already validated) data; `None` without a number.
    pub fn of(data: &Value) -> Option<Self> {
        let number = data.get("number")?.as_str()?;
        let last4 = number.get(number.len().checked_sub(4)?..)?.to_string();
        Some(Self {
            brand: brand(number),
            last4,
            expiration_month: data.get("expiration_month").and_then(Value::as_u64),
            expiration_year: data.get("expiration_year").and_then(Value::as_u64),
        })
    }
}

/// The network of a card number, from its leading digits (the same table as the hosted card
/// fields' script).
pub fn brand(number: &str) -> &'static str {
    let prefix = |n: usize| number.get(..n).and_then(|p| p.parse::<u32>().ok());
    let within = |n: usize, lo: u32, hi: u32| prefix(n).is_some_and(|p| (lo..=hi).contains(&p));
    if number.starts_with('4') {
        "visa"
    } else if within(2, 51, 55) || within(4, 2221, 2720) {
        "mastercard"
    } else if within(2, 34, 34) || within(2, 37, 37) {
        "american-express"
    } else if within(4, 6011, 6011) || within(3, 644, 649) || within(2, 65, 65) {
        "discover"
    } else if within(3, 300, 305) || within(2, 36, 36) || within(2, 38, 39) {
        "diners-club"
    } else if within(4, 3528, 3589) {
        "jcb"
    } else if within(2, 62, 62) {
        "unionpay"
    } else {
        "unknown"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brands_follow_the_leading_digits() {
        for (number, expected) in [
            ("4242424242424242", "visa"),
            ("5555555555554444", "mastercard"),
            ("2223003122003222", "mastercard"),
            ("378282246310005", "american-express"),
            ("6011111111111117", "discover"),
            ("6445644564456445", "discover"),
            ("3056930009020004", "diners-club"),
            ("36227206271667", "diners-club"),
            ("3566002020360505", "jcb"),
            ("6200000000000005", "unionpay"),
            ("9999999999999995", "unknown"),
            ("", "unknown"),
        ] {
            assert_eq!(brand(number), expected, "{number}");
        }
    }

    #[test]
    fn the_summary_shows_no_more_than_the_last_four_digits() {
        let data = serde_json::json!({"number": "4242424242424242", "expiration_month": 12,
            "expiration_year": 2031, "cvc": "123"});
        let summary = CardSummary::of(&data).expect("card");
        assert_eq!(
            summary,
            CardSummary {
                brand: "visa",
                last4: "4242".into(),
                expiration_month: Some(12),
                expiration_year: Some(2031)
            }
        );
        let shown = serde_json::to_string(&summary).expect("json");
        assert!(
            !shown.contains("424242424") && !shown.contains("123"),
            "{shown}"
        );
        assert_eq!(CardSummary::of(&serde_json::json!({"number": "42"})), None);
        let no_expiry = CardSummary::of(&serde_json::json!({"number": "4242424242424242"}))
            .expect("a card without expiry");
        assert_eq!(
            serde_json::to_value(no_expiry).expect("json"),
            serde_json::json!({"brand": "visa", "last4": "4242"})
        );
    }
}
