//! The frame's HTML: fixed markup per element, so that every input exists when the page
//! loads (browser autofill looks for `autocomplete` attributes then) and nothing the parent
//! sends becomes markup. Labels and placeholders the merchant chooses are set later by the
//! frame's script, as text.

use crate::config::ElementsConfig;

/// Which element a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    /// Number, expiry and CVC in one frame: what browser autofill fills at once.
    Card,
    /// The card number alone.
    CardNumber,
    /// `MM / YY` alone.
    CardExpirationDate,
    /// The CVC alone.
    CardVerificationCode,
    /// Any text (masked when the merchant marks it sensitive).
    Text,
}

impl Field {
    /// The element names of `elements.create`.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "card" => Self::Card,
            "cardNumber" => Self::CardNumber,
            "cardExpirationDate" => Self::CardExpirationDate,
            "cardVerificationCode" => Self::CardVerificationCode,
            "text" => Self::Text,
            _ => return None,
        })
    }

    fn inputs(self) -> &'static [&'static str] {
        match self {
            Self::Card => &[NUMBER, EXPIRY, CVC],
            Self::CardNumber => &[NUMBER],
            Self::CardExpirationDate => &[EXPIRY],
            Self::CardVerificationCode => &[CVC],
            Self::Text => &[TEXT],
        }
    }

    fn class(self) -> &'static str {
        match self {
            Self::Card => "card",
            Self::CardNumber => "card-number",
            Self::CardExpirationDate => "card-expiration-date",
            Self::CardVerificationCode => "card-verification-code",
            Self::Text => "text",
        }
    }
}

const NUMBER: &str = r#"<div class="cell number"><label for="number">Card number</label><input id="number" name="cardnumber" autocomplete="cc-number" inputmode="numeric" autocorrect="off" spellcheck="false" maxlength="23" aria-describedby="error" placeholder="1234 1234 1234 1234"><span id="brand" class="brand" aria-live="polite"></span></div>"#;
const EXPIRY: &str = r#"<div class="cell expiry"><label for="expiry">Expiration date</label><input id="expiry" name="exp-date" autocomplete="cc-exp" inputmode="numeric" autocorrect="off" spellcheck="false" maxlength="9" aria-describedby="error" placeholder="MM / YY"></div>"#;
const CVC: &str = r#"<div class="cell cvc"><label for="cvc">Security code</label><input id="cvc" name="cvc" autocomplete="cc-csc" inputmode="numeric" autocorrect="off" spellcheck="false" maxlength="4" aria-describedby="error" placeholder="CVC"></div>"#;
const TEXT: &str = r#"<div class="cell text"><label for="text">Text</label><input id="text" name="text" autocomplete="off" autocorrect="off" spellcheck="false" maxlength="4096" aria-describedby="error"></div>"#;

/// The frame page of `field`.
pub(crate) fn page(field: Field, config: &ElementsConfig) -> String {
    let inputs: String = field.inputs().concat();
    format!(
        concat!(
            "<!doctype html><html lang=\"en\" data-api=\"{api}\" data-key-header=\"{header}\">",
            "<head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<title>Payment details</title>",
            "<link rel=\"stylesheet\" href=\"frame.css\">",
            "<script src=\"frame.js\" defer></script></head>",
            "<body class=\"{class}\"><form novalidate><div class=\"row\">{inputs}</div>",
            "<p id=\"error\" class=\"error\" role=\"alert\"></p></form></body></html>"
        ),
        api = escape(config.api_origin.as_str()),
        header = escape(&config.api_key_header),
        class = field.class(),
        inputs = inputs,
    )
}

/// Escapes an attribute value. The values are an origin and a header name, which hold none
/// of these characters; escaping keeps that true whatever they become.
fn escape(raw: &str) -> String {
    raw.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_domain::origin::Origin;

    fn config() -> ElementsConfig {
        ElementsConfig {
            api_origin: Origin::parse("https://vault.example").expect("origin"),
            api_key_header: "svc-api-key".into(),
        }
    }

    #[test]
    fn the_card_element_has_every_autofill_attribute_and_a_label_for_each_input() {
        let html = page(Field::Card, &config());
        for needed in [
            r#"autocomplete="cc-number""#,
            r#"autocomplete="cc-exp""#,
            r#"autocomplete="cc-csc""#,
            r#"<label for="number">"#,
            r#"<label for="expiry">"#,
            r#"<label for="cvc">"#,
            r#"data-api="https://vault.example""#,
        ] {
            assert!(html.contains(needed), "{needed}");
        }
        assert!(!html.contains("<script>"), "no inline script");
    }

    #[test]
    fn single_fields_hold_one_input() {
        let html = page(Field::CardVerificationCode, &config());
        assert!(html.contains(r#"id="cvc""#) && !html.contains(r#"id="number""#));
        assert_eq!(Field::parse("cardNumber"), Some(Field::CardNumber));
        assert_eq!(Field::parse("card\"><script>"), None);
    }
}
