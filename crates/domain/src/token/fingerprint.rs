//! What a token's fingerprint is computed over.

use serde_json::Value;

use super::token_type::TokenType;

/// What a token's fingerprint is computed over when its create named no
/// `fingerprint_expression`: the number of a card, routing and account number of a bank
/// account, the digits of an SSN or EIN (Basis Theory's `{{ data | remove: '-' }}`), the string
/// of the other single-value types (`{{ data }}`), the canonical JSON of anything else (object
/// keys sorted, no whitespace), prefixed with the type so that no two types' inputs coincide.
/// Fingerprints of tokens written before these defaults existed are kept as stored.
pub fn fingerprint_input(token_type: TokenType, data: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(token_type.as_str().as_bytes());
    out.push(0);
    let field = |name: &str| data.get(name).and_then(Value::as_str).unwrap_or_default();
    match token_type {
        TokenType::Card => out.extend_from_slice(field("number").as_bytes()),
        TokenType::Bank => {
            out.extend_from_slice(field("routing_number").as_bytes());
            out.push(0);
            out.extend_from_slice(field("account_number").as_bytes());
        }
        TokenType::Token => canonical_json(data, &mut out),
        TokenType::SocialSecurityNumber | TokenType::EmployerIdNumber => out.extend(
            data.as_str()
                .unwrap_or_default()
                .bytes()
                .filter(|b| *b != b'-'),
        ),
        TokenType::CardNumber | TokenType::UsBankAccountNumber | TokenType::UsBankRoutingNumber => {
            out.extend_from_slice(data.as_str().unwrap_or_default().as_bytes());
        }
    }
    out
}

/// What a token's fingerprint is computed over when its create named a
/// `fingerprint_expression`: the type, then the expression's rendered text. An expression
/// that renders what a type's default reads gives the default's fingerprint (a card's
/// `{{ data.number }}`, an SSN's `{{ data | remove: '-' }}`).
pub(crate) fn expression_input(token_type: TokenType, rendered: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(rendered.len() + 24);
    out.extend_from_slice(token_type.as_str().as_bytes());
    out.push(0);
    out.extend_from_slice(rendered.as_bytes());
    out
}

/// Writes `value` as JSON with object keys in byte order and no whitespace (numbers and
/// strings as `serde_json` writes them), so equal data gives equal bytes whatever order its
/// keys arrived in.
pub fn canonical_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(&Value::String(key.clone()), out);
                out.push(b':');
                canonical_json(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(item, out);
            }
            out.push(b']');
        }
        // Scalars cannot fail to serialise into a Vec.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}
