//! Tenants: the unit of isolation. Each has its own data key.

use time::OffsetDateTime;

use crate::{
    ids::TenantId,
    validation::{char_len, ValidationErrors},
};

/// Longest tenant name, in characters.
pub const MAX_NAME_CHARS: usize = 200;

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// Identifier.
    pub id: TenantId,
    /// Display name.
    pub name: String,
    /// Creation time.
    pub created_at: OffsetDateTime,
}

/// Checks a tenant name: 1–200 characters, not blank.
pub fn validate_name(name: &str) -> Result<(), ValidationErrors> {
    if name.trim().is_empty() {
        Err(ValidationErrors::single("name", "is required"))
    } else if char_len(name) > MAX_NAME_CHARS {
        Err(ValidationErrors::single(
            "name",
            format!("must be at most {MAX_NAME_CHARS} characters"),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_bounded() {
        assert!(super::validate_name("acme").is_ok());
        assert!(super::validate_name("").is_err());
        assert!(super::validate_name(&"x".repeat(201)).is_err());
    }
}
