//! The shape a token's data must have, by type: any JSON value for `token`, a Luhn-valid card
//! number (with optional expiry and CVC) for `card`, an ABA-valid routing number and an account
//! number for `bank`. Problems are recorded under `data…`.

use serde_json::{Map, Value};

use super::token_type::TokenType;
use crate::{
    checksum::{aba_valid, luhn_valid},
    validation::ValidationErrors,
};

/// Checks `data` against the shape its type requires, recording problems under `data…`.
pub(super) fn validate_data(token_type: TokenType, data: &Value, errors: &mut ValidationErrors) {
    match token_type {
        TokenType::Token => {}
        TokenType::Card => validate_card(data, errors),
        TokenType::Bank => validate_bank(data, errors),
        TokenType::CardNumber => {
            if let Some(n) = digit_string(data, 13, 19, errors) {
                if !luhn_valid(n) {
                    errors.add("data", "fails the Luhn check");
                }
            }
        }
        TokenType::SocialSecurityNumber | TokenType::EmployerIdNumber => {
            nine_digits_with_dashes(data, errors);
        }
        TokenType::UsBankAccountNumber => {
            digit_string(data, 3, 17, errors);
        }
        TokenType::UsBankRoutingNumber => {
            if let Some(r) = digit_string(data, 9, 9, errors) {
                if !aba_valid(r) {
                    errors.add("data", "fails the ABA checksum");
                }
            }
        }
    }
}

/// `data` as a string of `min` to `max` digits, or a problem under `data`.
fn digit_string<'a>(
    data: &'a Value,
    min: usize,
    max: usize,
    errors: &mut ValidationErrors,
) -> Option<&'a str> {
    match digits_between(Some(data), min, max) {
        Ok(Some(s)) => Some(s),
        Ok(None) => {
            errors.add("data", "is required");
            None
        }
        Err(msg) => {
            errors.add("data", msg);
            None
        }
    }
}

/// An SSN or EIN: a string of nine digits, with optional `-` delimiters between them.
fn nine_digits_with_dashes(data: &Value, errors: &mut ValidationErrors) {
    let ok = data.as_str().is_some_and(|s| {
        let digits = s.bytes().filter(u8::is_ascii_digit).count();
        digits == 9
            && s.bytes().all(|b| b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
            && !s.contains("--")
    });
    if !ok {
        errors.add(
            "data",
            "must be a string of nine digits, with optional `-` delimiters",
        );
    }
}

fn object<'a>(
    data: &'a Value,
    errors: &mut ValidationErrors,
    kind: &str,
) -> Option<&'a Map<String, Value>> {
    let obj = data.as_object();
    if obj.is_none() {
        errors.add("data", format!("must be an object for a {kind} token"));
    }
    obj
}

fn reject_unknown(obj: &Map<String, Value>, known: &[&str], errors: &mut ValidationErrors) {
    for key in obj.keys().filter(|k| !known.contains(&k.as_str())) {
        errors.add(format!("data.{key}"), "is not a known field");
    }
}

fn digits_between(value: Option<&Value>, min: usize, max: usize) -> Result<Option<&str>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s))
            if (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Ok(Some(s))
        }
        Some(Value::String(_)) if min == max => Err(format!("must be a string of {min} digits")),
        _ => Err(format!("must be a string of {min} to {max} digits")),
    }
}

fn validate_card(data: &Value, errors: &mut ValidationErrors) {
    let Some(obj) = object(data, errors, "card") else {
        return;
    };
    reject_unknown(
        obj,
        &["number", "expiration_month", "expiration_year", "cvc"],
        errors,
    );
    match digits_between(obj.get("number"), 12, 19) {
        Ok(Some(n)) if !luhn_valid(n) => errors.add("data.number", "fails the Luhn check"),
        Ok(Some(_)) => {}
        Ok(None) => errors.add("data.number", "is required"),
        Err(msg) => errors.add("data.number", msg),
    }
    let month = obj.get("expiration_month").filter(|v| !v.is_null());
    let year = obj.get("expiration_year").filter(|v| !v.is_null());
    if let Some(m) = month {
        if !m.as_i64().is_some_and(|m| (1..=12).contains(&m)) {
            errors.add("data.expiration_month", "must be an integer from 1 to 12");
        }
    }
    if let Some(y) = year {
        if !y.as_i64().is_some_and(|y| (1000..=9999).contains(&y)) {
            errors.add("data.expiration_year", "must be a four-digit integer");
        }
    }
    match (month, year) {
        (Some(_), None) => errors.add("data.expiration_year", "is required with expiration_month"),
        (None, Some(_)) => errors.add("data.expiration_month", "is required with expiration_year"),
        _ => {}
    }
    if let Err(msg) = digits_between(obj.get("cvc"), 3, 4) {
        errors.add("data.cvc", msg);
    }
}

fn validate_bank(data: &Value, errors: &mut ValidationErrors) {
    let Some(obj) = object(data, errors, "bank") else {
        return;
    };
    reject_unknown(obj, &["routing_number", "account_number"], errors);
    match digits_between(obj.get("routing_number"), 9, 9) {
        Ok(Some(r)) if !aba_valid(r) => errors.add("data.routing_number", "fails the ABA checksum"),
        Ok(Some(_)) => {}
        Ok(None) => errors.add("data.routing_number", "is required"),
        Err(msg) => errors.add("data.routing_number", msg),
    }
    match digits_between(obj.get("account_number"), 1, 17) {
        Ok(Some(_)) => {}
        Ok(None) => errors.add("data.account_number", "is required"),
        Err(msg) => errors.add("data.account_number", msg),
    }
}
