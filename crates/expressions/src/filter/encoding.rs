//! Casts and encodings: `to_string`, `to_number`, `to_boolean`, `stringify`,
//! `json_stringify`, `to_base64`, `to_base16` and `hmac`.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use hmac::{Hmac, Mac};
use serde_json::{Number, Value};

use super::{
    args::Args,
    flow::{hex_upper, unapplicable, Flow, Unapplicable},
};

/// The hash of an `hmac` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HmacAlgorithm {
    /// `sha-1`.
    Sha1,
    /// `sha-256` (the default).
    Sha256,
    /// `sha-512`.
    Sha512,
}

impl HmacAlgorithm {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "sha-1" => Some(Self::Sha1),
            "sha-256" => Some(Self::Sha256),
            "sha-512" => Some(Self::Sha512),
            _ => None,
        }
    }

    fn sign(self, key: &[u8], message: &[u8]) -> Vec<u8> {
        fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], message: &[u8]) -> Vec<u8> {
            // HMAC takes a key of any length.
            match <M as hmac::digest::KeyInit>::new_from_slice(key) {
                Ok(mut m) => {
                    m.update(message);
                    m.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            }
        }
        match self {
            Self::Sha1 => mac::<Hmac<sha1::Sha1>>(key, message),
            Self::Sha256 => mac::<Hmac<sha2::Sha256>>(key, message),
            Self::Sha512 => mac::<Hmac<sha2::Sha512>>(key, message),
        }
    }
}

/// A cast or an encoding.
#[derive(Debug, Clone)]
pub enum Encoding {
    /// `to_string`: strings stay, `null` stays, anything else becomes its compact JSON text.
    ToString,
    /// `to_number`: numbers stay, numeric strings become numbers.
    ToNumber,
    /// `to_boolean`: booleans stay, `"true"`/`"false"` become booleans.
    ToBoolean,
    /// `stringify`: the value's JSON text, as a string (`null` too).
    Stringify,
    /// `json_stringify`: the value's JSON text; `null` stays `null`. Last in its expression.
    JsonStringify,
    /// `to_base64`: base64 of bytes, of a string's UTF-8, or of another value's JSON text.
    ToBase64,
    /// `to_base16`: upper-case hex, of what `to_base64` would encode.
    ToBase16,
    /// `hmac: algorithm, key`: the HMAC of the value's text under the key's text, as bytes.
    Hmac {
        /// The hash.
        algorithm: HmacAlgorithm,
        /// The key's text.
        key: String,
    },
}

impl Encoding {
    /// The filter `name` with its `argument` text, if `name` is one of these.
    pub(crate) fn parse(name: &str, argument: Option<&str>) -> Option<Result<Self, String>> {
        let plain = |name: &'static str, f: Encoding| {
            Some(
                Args::parse(name, argument)
                    .and_then(|a| a.at_most(0))
                    .map(|()| f),
            )
        };
        match name {
            "to_string" => plain("to_string", Self::ToString),
            "to_number" => plain("to_number", Self::ToNumber),
            "to_boolean" => plain("to_boolean", Self::ToBoolean),
            "stringify" => plain("stringify", Self::Stringify),
            "json_stringify" => plain("json_stringify", Self::JsonStringify),
            "to_base64" => plain("to_base64", Self::ToBase64),
            "to_base16" => plain("to_base16", Self::ToBase16),
            "hmac" => Some(Args::parse("hmac", argument).and_then(|a| hmac(&a))),
            _ => None,
        }
    }

    /// The filter's name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::ToString => "to_string",
            Self::ToNumber => "to_number",
            Self::ToBoolean => "to_boolean",
            Self::Stringify => "stringify",
            Self::JsonStringify => "json_stringify",
            Self::ToBase64 => "to_base64",
            Self::ToBase16 => "to_base16",
            Self::Hmac { .. } => "hmac",
        }
    }

    /// Applies it.
    pub(crate) fn apply(&self, input: Flow) -> Result<Flow, Unapplicable> {
        let name = self.name();
        let value = match (self, input) {
            (Self::Stringify, input) => Value::String(input.into_value().to_string()),
            (_, Flow::Json(Value::Null)) if self.keeps_null() => Value::Null,
            (Self::ToString, Flow::Json(Value::String(s))) => Value::String(s),
            (Self::ToString, input) => Value::String(text_of(&input.into_value())),
            (Self::JsonStringify, input) => Value::String(input.into_value().to_string()),
            (Self::ToNumber, Flow::Json(Value::Number(n))) => Value::Number(n),
            (Self::ToNumber, Flow::Json(Value::String(s))) => parse_number(s.trim())
                .ok_or(unapplicable(name, "expects a number or a numeric string"))?,
            (Self::ToNumber, _) => {
                return Err(unapplicable(name, "expects a number or a numeric string"))
            }
            (Self::ToBoolean, Flow::Json(Value::Bool(b))) => Value::Bool(b),
            (Self::ToBoolean, Flow::Json(Value::String(s))) => parse_bool(&s).ok_or(
                unapplicable(name, "expects a boolean, \"true\" or \"false\""),
            )?,
            (Self::ToBoolean, _) => {
                return Err(unapplicable(
                    name,
                    "expects a boolean, \"true\" or \"false\"",
                ))
            }
            (Self::ToBase64, input) => Value::String(STANDARD.encode(bytes_of(&input, name)?)),
            (Self::ToBase16, input) => Value::String(hex_upper(&bytes_of(&input, name)?)),
            (Self::Hmac { algorithm, key }, input) => {
                let message = bytes_of(&input, name)?;
                return Ok(Flow::Bytes(algorithm.sign(key.as_bytes(), &message)));
            }
        };
        Ok(Flow::Json(value))
    }

    /// Whether `null` passes through as `null` (as Basis Theory documents for the casts).
    fn keeps_null(&self) -> bool {
        matches!(
            self,
            Self::ToString | Self::ToNumber | Self::ToBoolean | Self::JsonStringify
        )
    }

    /// Upper bound of the result's JSON text, from the input's.
    pub(crate) fn bound(&self, input: u64) -> u64 {
        match self {
            // A string's text is its content; another value's is its JSON, escaped in a string.
            Self::ToString | Self::Stringify | Self::JsonStringify => {
                input.saturating_mul(2).saturating_add(2)
            }
            // The longest a 64-bit float is written: `-2.2250738585072014e-308`.
            Self::ToNumber => input.max(24),
            Self::ToBoolean => 5,
            Self::ToBase64 | Self::ToBase16 => input.saturating_mul(2).saturating_add(6),
            // The longest digest (SHA-512, 64 bytes) as hex, quoted.
            Self::Hmac { .. } => 2 * 64 + 2,
        }
    }
}

/// `hmac: 'sha-256', 'key'`, or `hmac: 'key'` with the default hash.
fn hmac(args: &Args) -> Result<Encoding, String> {
    args.at_most(2)?;
    let (algorithm, key) = match args.len() {
        2 => {
            let name = args.string(0)?;
            let algorithm = HmacAlgorithm::parse(&name).ok_or_else(|| {
                "filter `hmac`: the algorithm must be sha-1, sha-256 or sha-512".to_string()
            })?;
            (algorithm, args.string(1)?)
        }
        _ => {
            let key = args.string(0)?;
            if HmacAlgorithm::parse(&key).is_some() {
                return Err("filter `hmac` needs a key after the algorithm".into());
            }
            (HmacAlgorithm::Sha256, key)
        }
    };
    Ok(Encoding::Hmac { algorithm, key })
}

/// The bytes an encoding reads: bytes as they are, a string's UTF-8, another value's JSON text.
fn bytes_of(input: &Flow, name: &'static str) -> Result<Vec<u8>, Unapplicable> {
    match input {
        Flow::Bytes(bytes) => Ok(bytes.clone()),
        Flow::Json(Value::Null) => Err(unapplicable(name, "expects a value, not null")),
        Flow::Json(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Flow::Json(other) => Ok(other.to_string().into_bytes()),
    }
}

/// Strings as they are; anything else as compact JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_bool(s: &str) -> Option<Value> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("true") {
        Some(Value::Bool(true))
    } else if s.eq_ignore_ascii_case("false") {
        Some(Value::Bool(false))
    } else {
        None
    }
}

fn parse_number(s: &str) -> Option<Value> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::Number(i.into()));
    }
    if let Ok(u) = s.parse::<u64>() {
        return Some(Value::Number(u.into()));
    }
    s.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Chain;

    fn run(chain: &str, input: Value) -> Value {
        Chain::parse(chain)
            .expect(chain)
            .render_strict(input)
            .expect(chain)
    }

    use super::*;

    /// Basis Theory's documented examples; the `secretText` ones in its documentation do not
    /// match HMAC-SHA-256 of their own inputs, so these are computed (the card number's
    /// documented value does match).
    #[test]
    fn hmac_and_its_encodings() {
        let card = json!("4242424242424242");
        assert_eq!(
            run(
                "| hmac: 'sha-256', 'secretKeyValue' | to_base16",
                card.clone()
            ),
            json!("90A0050E90515101DCAD0F68955370CCA81F6DCB9D299E7E0585CC9746716D9B")
        );
        assert_eq!(
            run("| hmac: 'secretKeyValue' | to_base64", card),
            json!("kKAFDpBRUQHcrQ9olVNwzKgfbcudKZ5+BYXMl0ZxbZs="),
            "sha-256 is the default"
        );
        let text = json!("secretText");
        for (algorithm, hex) in [
            ("sha-1", "BB808CC898AAAD7FA338854A8E933D93D6BFEAEE"),
            ("sha-256", "21010E1156D4D58B8A65EBA102F718C146F367A4A79143DE272CB969963A28CB"),
            ("sha-512", "5A686ABEF6541FE2535366DE610ED2809C9F5773B978955B75A71902989C09814921020FDBCE1C01F5C703DBBA04472D0F3E5374A428974708B8FEE0AD3ABA05"),
        ] {
            let chain = format!("| hmac: '{algorithm}', 'secretKeyValue' | to_base16");
            assert_eq!(run(&chain, text.clone()), json!(hex), "{algorithm}");
        }
        assert_eq!(
            run(
                "| hmac: 'sha-256', 'secretKeyValue' | to_base64",
                text.clone()
            ),
            json!("IQEOEVbU1YuKZeuhAvcYwUbzZ6SnkUPeJyy5aZY6KMs=")
        );
        // Bytes left at the end of an expression are their hex.
        assert_eq!(
            run("| hmac: 'sha-256', 'secretKeyValue'", text),
            json!("21010E1156D4D58B8A65EBA102F718C146F367A4A79143DE272CB969963A28CB")
        );
        assert_eq!(run("| to_base16", json!("hi")), json!("6869"));
        for bad in ["hmac", "hmac: 'md5', 'k'", "hmac: 'sha-256'", "hmac: 1"] {
            assert!(Chain::parse(&format!("| {bad}")).is_err(), "{bad}");
        }
    }

    #[test]
    #[allow(
        clippy::approx_constant,
        reason = "Basis Theory's documented example value"
    )]
    fn casts_follow_the_documented_examples() {
        let data = json!({"numeric_value": 3.14159, "boolean_value": true, "string_value": "foo",
            "int_string": "42", "decimal_string": "3.14159", "true_string": "true"});
        for (chain, expected) in [
            ("| json: '$.numeric_value' | to_string", json!("3.14159")),
            ("| json: '$.boolean_value' | to_string", json!("true")),
            ("| json: '$.string_value' | to_string", json!("foo")),
            ("| json: '$.int_string' | to_number", json!(42)),
            ("| json: '$.decimal_string' | to_number", json!(3.14159)),
            ("| json: '$.true_string' | to_boolean", json!(true)),
            ("| json: '$.missing' | to_string", Value::Null),
            ("| json: '$.missing' | json_stringify", Value::Null),
            ("| json: '$.missing' | stringify", json!("null")),
        ] {
            assert_eq!(run(chain, data.clone()), expected, "{chain}");
        }
        let books = json!({"price": 8.99, "bicycle": {"color": "red", "price": 19.95}});
        assert_eq!(
            run("| json: '$.price' | json_stringify", books.clone()),
            json!("8.99")
        );
        assert_eq!(
            run("| json: '$.bicycle' | json_stringify", books),
            json!("{\"color\":\"red\",\"price\":19.95}")
        );
        assert_eq!(run("| to_base64", json!("hi")), json!("aGk="));
        for (chain, input) in [
            ("| to_number", json!("4242abc")),
            ("| to_boolean", json!("yes")),
        ] {
            assert!(
                Chain::parse(chain)
                    .expect(chain)
                    .render_strict(input)
                    .is_err(),
                "{chain}"
            );
        }
    }
}
