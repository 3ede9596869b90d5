//! Filters applied to a token value inside an expression.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use serde_json::{Number, Value};
use serde_json_path::JsonPath;

use crate::{error::DetokenizeError, expression::truncate};

/// One filter of the grammar.
#[derive(Debug, Clone)]
pub enum Filter {
    /// `json: '<path>'`: the single value the RFC 9535 JSONPath selects.
    Json(Box<JsonPath>),
    /// `last4`: the last four characters of a string (or number).
    Last4,
    /// `to_string`: strings stay, anything else becomes its compact JSON text.
    ToString,
    /// `to_number`: numbers stay, numeric strings become numbers.
    ToNumber,
    /// `to_boolean`: booleans stay, `"true"`/`"false"` become booleans.
    ToBoolean,
    /// `stringify`: the value's JSON text, as a string.
    Stringify,
    /// `to_base64`: base64 of a string's UTF-8 (or of other values' JSON text).
    ToBase64,
}

impl Filter {
    /// The filter's name in the grammar.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::Json(_) => "json",
            Filter::Last4 => "last4",
            Filter::ToString => "to_string",
            Filter::ToNumber => "to_number",
            Filter::ToBoolean => "to_boolean",
            Filter::Stringify => "stringify",
            Filter::ToBase64 => "to_base64",
        }
    }

    /// Parses one `| …` segment; `offset` is its byte offset for errors.
    pub(crate) fn parse(
        segment: &str,
        offset: usize,
        location: &str,
    ) -> Result<Self, DetokenizeError> {
        let err = |at: usize, message: String| DetokenizeError::Syntax {
            offset: at,
            location: location.to_string(),
            message,
        };
        let lead = segment.len() - segment.trim_start().len();
        let at = offset + lead;
        let trimmed = segment.trim();
        let (name, argument) = match trimmed.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (trimmed, None),
        };
        let simple = |f: Filter| match argument {
            None => Ok(f),
            Some(_) => Err(err(at, format!("filter `{name}` takes no argument"))),
        };
        match name {
            "json" => {
                let raw = argument.ok_or_else(|| err(at, "filter `json` needs a quoted JSONPath, e.g. json: '$.number'".into()))?;
                let quoted = raw.len() >= 2
                    && ((raw.starts_with('\'') && raw.ends_with('\'')) || (raw.starts_with('"') && raw.ends_with('"')));
                if !quoted {
                    return Err(err(at, "the JSONPath must be quoted, e.g. json: '$.number'".into()));
                }
                let path = &raw[1..raw.len() - 1];
                JsonPath::parse(path)
                    .map(|p| Filter::Json(Box::new(p)))
                    .map_err(|e| err(at, format!("invalid JSONPath `{}`: {e}", truncate(path))))
            }
            "last4" => simple(Filter::Last4),
            "to_string" => simple(Filter::ToString),
            "to_number" => simple(Filter::ToNumber),
            "to_boolean" => simple(Filter::ToBoolean),
            "stringify" => simple(Filter::Stringify),
            "to_base64" => simple(Filter::ToBase64),
            "" => Err(err(at, "empty filter after `|`".into())),
            other => Err(err(
                at,
                format!(
                    "unknown filter `{}` (json, last4, to_string, to_number, to_boolean, stringify, to_base64)",
                    truncate(other)
                ),
            )),
        }
    }

    /// Applies the filter. Errors describe the problem, never the value.
    pub fn apply(&self, value: Value, token: &str) -> Result<Value, DetokenizeError> {
        let fail = |message: &str| DetokenizeError::Filter {
            filter: self.name(),
            token: token.to_string(),
            message: message.to_string(),
        };
        match self {
            Filter::Json(path) => {
                let nodes = path.query(&value).all();
                match nodes.as_slice() {
                    [one] => Ok((*one).clone()),
                    [] => Err(fail(
                        "the JSONPath matched nothing; it must match exactly one value",
                    )),
                    many => Err(fail(&format!(
                        "the JSONPath matched {} values; it must match exactly one",
                        many.len()
                    ))),
                }
            }
            Filter::Last4 => match &value {
                Value::String(s) => Ok(Value::String(last_chars(s, 4))),
                Value::Number(n) => Ok(Value::String(last_chars(&n.to_string(), 4))),
                _ => Err(fail("needs a string or a number")),
            },
            Filter::ToString => Ok(Value::String(text_of(&value))),
            Filter::ToNumber => match &value {
                Value::Number(_) => Ok(value),
                Value::String(s) => {
                    parse_number(s.trim()).ok_or_else(|| fail("the string is not a number"))
                }
                _ => Err(fail("needs a number or a numeric string")),
            },
            Filter::ToBoolean => match &value {
                Value::Bool(_) => Ok(value),
                Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
                Value::String(s) if s.trim().eq_ignore_ascii_case("false") => {
                    Ok(Value::Bool(false))
                }
                _ => Err(fail("needs a boolean or the string \"true\" or \"false\"")),
            },
            Filter::Stringify => Ok(Value::String(value.to_string())),
            Filter::ToBase64 => Ok(Value::String(STANDARD.encode(text_of(&value)))),
        }
    }
}

/// Strings as they are; anything else as compact JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn last_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
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
    use super::*;
    use serde_json::json;

    fn filter(s: &str) -> Filter {
        Filter::parse(s, 0, "test").expect("filter")
    }

    #[test]
    fn filters_transform_values() {
        let card = json!({"number": "4242424242424242", "exp": 12});
        assert_eq!(
            filter("json: '$.number'")
                .apply(card.clone(), "t")
                .expect("json"),
            json!("4242424242424242")
        );
        assert_eq!(
            filter("last4")
                .apply(json!("4242424242424242"), "t")
                .expect("last4"),
            json!("4242")
        );
        assert_eq!(
            filter("last4").apply(json!(12345), "t").expect("last4"),
            json!("2345")
        );
        assert_eq!(
            filter("last4").apply(json!("ab"), "t").expect("short"),
            json!("ab")
        );
        assert_eq!(
            filter("to_string").apply(json!(12), "t").expect("str"),
            json!("12")
        );
        assert_eq!(
            filter("to_string")
                .apply(json!({"a": 1}), "t")
                .expect("str"),
            json!("{\"a\":1}")
        );
        assert_eq!(
            filter("to_number").apply(json!(" 42 "), "t").expect("num"),
            json!(42)
        );
        assert_eq!(
            filter("to_number").apply(json!("4.5"), "t").expect("num"),
            json!(4.5)
        );
        assert_eq!(
            filter("to_boolean")
                .apply(json!("TRUE"), "t")
                .expect("bool"),
            json!(true)
        );
        assert_eq!(
            filter("stringify").apply(json!("a\"b"), "t").expect("s"),
            json!("\"a\\\"b\"")
        );
        assert_eq!(
            filter("to_base64").apply(json!("hi"), "t").expect("b64"),
            json!("aGk=")
        );
    }

    #[test]
    fn filters_refuse_what_they_cannot_handle_without_echoing_values() {
        let secret = json!({"number": "4242424242424242"});
        for (f, v) in [
            ("json: '$.missing'", secret.clone()),
            ("json: '$.*'", json!({"a": 1, "b": 2})),
            ("last4", secret.clone()),
            ("to_number", json!("4242abc")),
            ("to_boolean", json!("yes")),
        ] {
            let e = filter(f).apply(v, "tok").expect_err(f);
            assert!(!e.to_string().contains("4242"), "{e}");
        }
    }

    #[test]
    fn parse_errors() {
        for bad in ["json", "json: $.a", "last4: 2", "shout", ""] {
            assert!(Filter::parse(bad, 0, "t").is_err(), "{bad}");
        }
    }
}
