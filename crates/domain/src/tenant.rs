//! Tenants: the unit of isolation. Each has its own data key.

use time::OffsetDateTime;

use crate::{
    ids::TenantId,
    validation::{check_name, ValidationErrors},
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
    let mut errors = ValidationErrors::new();
    check_name(name, MAX_NAME_CHARS, &mut errors);
    errors.into_result()
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
