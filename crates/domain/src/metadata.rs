//! Token metadata: non-sensitive string pairs, with the limits of docs/api.md, "Tokens".

use std::collections::BTreeMap;

use crate::validation::{char_len, check_no_nul, has_nul, ValidationErrors, NUL_MESSAGE};

/// Most entries a metadata map may hold.
pub const MAX_ENTRIES: usize = 100;
/// Longest key, in characters.
pub const MAX_KEY_CHARS: usize = 200;
/// Longest value, in characters.
pub const MAX_VALUE_CHARS: usize = 500;

/// Most metadata pairs one list or search may filter by. Each pair is one more probe of the
/// metadata index per candidate token; unbounded, 100 pairs kept a PostgreSQL connection busy
/// for about a minute.
pub const MAX_FILTER_PAIRS: usize = 10;

/// Records a problem under `field` when a filter holds more than [`MAX_FILTER_PAIRS`] pairs.
pub fn bound_filter(pairs: usize, field: &str, errors: &mut ValidationErrors) {
    if pairs > MAX_FILTER_PAIRS {
        errors.add(
            field,
            format!("may filter by at most {MAX_FILTER_PAIRS} metadata pairs"),
        );
    }
}

/// Non-sensitive key/value pairs attached to a token. Ordered so output is stable.
pub type Metadata = BTreeMap<String, String>;

/// Checks the metadata limits, recording problems under `metadata`/`metadata.<key>`.
pub fn validate(metadata: &Metadata, errors: &mut ValidationErrors) {
    if metadata.len() > MAX_ENTRIES {
        errors.add(
            "metadata",
            format!("must have at most {MAX_ENTRIES} entries"),
        );
    }
    for (key, value) in metadata {
        if key.is_empty() {
            errors.add("metadata", "keys must not be empty");
        } else if char_len(key) > MAX_KEY_CHARS {
            errors.add(
                "metadata",
                format!("keys must be at most {MAX_KEY_CHARS} characters"),
            );
        } else if has_nul(key) {
            errors.add("metadata", format!("keys {NUL_MESSAGE}"));
        } else if char_len(value) > MAX_VALUE_CHARS {
            errors.add(
                format!("metadata.{key}"),
                format!("must be at most {MAX_VALUE_CHARS} characters"),
            );
        } else {
            check_no_nul(value, &format!("metadata.{key}"), errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(m: &Metadata) -> ValidationErrors {
        let mut e = ValidationErrors::new();
        validate(m, &mut e);
        e
    }

    #[test]
    fn limits_are_inclusive() {
        let mut m = Metadata::new();
        for i in 0..MAX_ENTRIES {
            m.insert(format!("k{i}"), "v".repeat(MAX_VALUE_CHARS));
        }
        m.insert("k0".to_string(), "é".repeat(MAX_VALUE_CHARS));
        assert!(check(&m).is_empty());
        m.insert("one-too-many".to_string(), String::new());
        assert!(check(&m).fields().contains_key("metadata"));
    }

    #[test]
    fn long_keys_values_and_empty_keys_fail() {
        let m = Metadata::from([("k".repeat(MAX_KEY_CHARS + 1), "v".to_string())]);
        assert!(check(&m).fields().contains_key("metadata"));
        let m = Metadata::from([("k".to_string(), "v".repeat(MAX_VALUE_CHARS + 1))]);
        assert!(check(&m).fields().contains_key("metadata.k"));
        let m = Metadata::from([(String::new(), "v".to_string())]);
        assert!(check(&m).fields().contains_key("metadata"));
    }
}
