//! Field-level validation errors, collected rather than failing on the first problem so that a
//! caller sees everything wrong with a request at once.

use std::collections::BTreeMap;

/// Problems found in an input, keyed by field path (`name`, `data.number`, `rules[0].container`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationErrors {
    fields: BTreeMap<String, Vec<String>>,
}

impl ValidationErrors {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding one problem.
    pub fn single(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, message);
        errors
    }

    /// Records a problem with `field`.
    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.fields
            .entry(field.into())
            .or_default()
            .push(message.into());
    }

    /// Records every problem of `other`, each field path prefixed with `prefix` (`""` for
    /// none; `"[3]."` to place an element's problems under its index).
    pub fn extend_under(&mut self, prefix: &str, other: ValidationErrors) {
        for (field, messages) in other.fields {
            self.fields
                .entry(format!("{prefix}{field}"))
                .or_default()
                .extend(messages);
        }
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The problems, by field path.
    pub fn fields(&self) -> &BTreeMap<String, Vec<String>> {
        &self.fields
    }

    /// `Ok(())` when empty, else `Err(self)`.
    pub fn into_result(self) -> Result<(), ValidationErrors> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

impl std::fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for (field, messages) in &self.fields {
            for message in messages {
                if !first {
                    f.write_str("; ")?;
                }
                first = false;
                write!(f, "{field}: {message}")?;
            }
        }
        Ok(())
    }
}

/// The rule every display name follows: not blank, at most `max` characters, no NUL; a
/// problem is recorded under `name`.
pub(crate) fn check_name(name: &str, max: usize, errors: &mut ValidationErrors) {
    if name.trim().is_empty() {
        errors.add("name", "is required");
    } else if char_len(name) > max {
        errors.add("name", format!("must be at most {max} characters"));
    } else {
        check_no_nul(name, "name", errors);
    }
}

/// Text that is stored or searched as text must not hold NUL (U+0000): PostgreSQL cannot
/// store it, and accepting it on SQLite only would make the backends disagree.
pub fn check_no_nul(value: &str, field: &str, errors: &mut ValidationErrors) {
    if has_nul(value) {
        errors.add(field, NUL_MESSAGE);
    }
}

/// Whether `value` holds NUL (U+0000).
pub fn has_nul(value: &str) -> bool {
    value.contains('\0')
}

/// The message for text holding NUL.
pub const NUL_MESSAGE: &str = "must not contain NUL (U+0000) characters";

/// Length of a string in characters (what users count), not bytes.
pub(crate) fn char_len(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refuse_nul() {
        let mut e = ValidationErrors::new();
        check_name("a\u{0}b", 200, &mut e);
        assert_eq!(e.fields()["name"], vec![NUL_MESSAGE.to_string()]);
        let mut e = ValidationErrors::new();
        check_name("fine name", 200, &mut e);
        assert!(e.into_result().is_ok());
    }

    #[test]
    fn extends_under_a_prefix_keeping_every_message() {
        let mut all = ValidationErrors::single("name", "is required");
        let mut element = ValidationErrors::single("data.number", "fails the Luhn check");
        element.add("data.number", "is too long");
        all.extend_under("[3].", element);
        all.extend_under("", ValidationErrors::single("name", "is too long"));
        assert_eq!(all.fields()["[3].data.number"].len(), 2);
        assert_eq!(all.fields()["name"], vec!["is required", "is too long"]);
    }

    #[test]
    fn collects_messages_per_field() {
        let mut e = ValidationErrors::new();
        assert!(e.clone().into_result().is_ok());
        e.add("name", "is required");
        e.add("name", "is too long");
        e.add("data.number", "fails the Luhn check");
        assert_eq!(e.fields()["name"].len(), 2);
        assert_eq!(
            e.to_string(),
            "data.number: fails the Luhn check; name: is required; name: is too long"
        );
        assert!(e.into_result().is_err());
    }
}
