//! Decoding errors in the words of JSON, not of Rust.
//!
//! serde describes what it expected by the Rust type it was reading (`expected struct
//! ApplicationRef`, `expected u32`, `expected a sequence`) and quotes the value it found, which
//! may be part of a secret the caller sent where something else belonged. A caller reads JSON:
//! the message given back names the JSON shape that was expected (`an object`, `a whole number`,
//! `an array`) and only the kind of value found (docs/api.md, "Errors"). A message that is not
//! one of serde's is returned as it is.

/// `message` (one of serde_json's), restated as JSON shapes, without the value found or the
/// position in the input.
pub(crate) fn plain(message: &str) -> String {
    let message = without_position(message);
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        if let Some((found, expected)) = rest.rsplit_once(", expected ") {
            return format!("expected {}, found {}", shape(expected), kind(found));
        }
    }
    if let Some(rest) = message.strip_prefix("invalid value: ") {
        if let Some((found, expected)) = rest.rsplit_once(", expected ") {
            return format!("expected {}, found {}", shape(expected), value(found));
        }
    }
    if let Some(rest) = message.strip_prefix("invalid length ") {
        if let Some((length, expected)) = rest.split_once(", expected ") {
            return format!("expected {}, found {length} elements", shape(expected));
        }
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        if let Some((_, accepted)) = rest.split_once(", expected ") {
            return format!("expected {accepted}");
        }
    }
    if message.starts_with("data did not match any variant of untagged enum") {
        return "the value has none of the accepted shapes".to_string();
    }
    message.to_string()
}

/// serde_json's message without its trailing ` at line L column C`.
pub(crate) fn without_position(message: &str) -> &str {
    match message.rsplit_once(" at line ") {
        Some((head, tail))
            if tail
                .split_once(" column ")
                .is_some_and(|(l, c)| is_number(l) && is_number(c)) =>
        {
            head
        }
        _ => message,
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// What serde expected, as a JSON shape.
fn shape(expected: &str) -> String {
    let plain = match expected {
        "a sequence" | "a tuple" => "an array",
        "a map" | "unit" => "an object",
        "a borrowed string" | "a string" | "a character" | "a char" => "a string",
        "a boolean" => "a boolean",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number of 0 or more",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "option" => "a value or null",
        _ if expected.starts_with("struct ")
            || expected.starts_with("tuple struct ")
            || expected.starts_with("internally tagged enum ")
            || expected.starts_with("adjacently tagged enum ") =>
        {
            "an object"
        }
        _ if expected.starts_with("enum ") => "a string",
        _ if expected.contains("OffsetDateTime") => "an RFC 3339 date-time string",
        _ if expected.starts_with("unit struct ") || expected.starts_with("unit variant") => "null",
        _ => return expected.to_string(),
    };
    plain.to_string()
}

/// The kind of JSON value serde found (never the value itself).
fn kind(found: &str) -> &'static str {
    match found.split_once(' ').map_or(found, |(first, _)| first) {
        "string" | "character" => "a string",
        "integer" | "floating" => "a number",
        "boolean" => "a boolean",
        "null" | "unit" => "null",
        "map" | "struct" => "an object",
        "sequence" | "tuple" => "an array",
        _ => "another kind of value",
    }
}

/// A value serde found out of range, by its kind only: even a number may be a card number
/// sent into the wrong field (docs/api.md, "Errors").
fn value(found: &str) -> &'static str {
    match found.split_once(' ').map_or(found, |(first, _)| first) {
        "integer" | "floating" => "a number out of range",
        _ => kind(found),
    }
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn rust_type_names_become_json_shapes() {
        for (serde, ours) in [
            (
                r#"invalid type: string "5f1b", expected struct ApplicationRef at line 1 column 30"#,
                "expected an object, found a string",
            ),
            (
                "invalid type: integer `5`, expected a sequence at line 1 column 4",
                "expected an array, found a number",
            ),
            (
                r#"invalid type: string "x", expected u32"#,
                "expected a whole number of 0 or more, found a string",
            ),
            (
                "invalid type: map, expected a string",
                "expected a string, found an object",
            ),
            (
                "invalid type: null, expected enum TokenType",
                "expected a string, found null",
            ),
            (
                "invalid value: integer `-1`, expected u32",
                "expected a whole number of 0 or more, found a number out of range",
            ),
            (
                "invalid type: boolean `true`, expected an RFC3339-formatted `OffsetDateTime`",
                "expected an RFC 3339 date-time string, found a boolean",
            ),
            (
                "data did not match any variant of untagged enum Body",
                "the value has none of the accepted shapes",
            ),
            (
                "unknown variant `4111111111111111`, expected one of `card`, `bank`, `token`",
                "expected one of `card`, `bank`, `token`",
            ),
            (
                "unknown field `typo`, expected one of `name`, `type`",
                "unknown field `typo`, expected one of `name`, `type`",
            ),
        ] {
            assert_eq!(plain(serde), ours, "{serde}");
        }
    }

    #[test]
    fn a_string_found_is_never_quoted_back() {
        for serde in [
            r#"invalid type: string "4242424242424242", expected a sequence"#,
            "unknown variant `4242424242424242`, expected `code`",
            "invalid value: integer `4242424242424242`, expected i32",
        ] {
            let message = plain(serde);
            assert!(!message.contains("4242"), "{message}");
        }
    }
}
