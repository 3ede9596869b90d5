//! What an answer shows of a token's data: the plaintext, its mask, or nothing
//! (docs/api.md, "Transforms").

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// How a token's `data` appears in the answers an application receives. An access rule
/// carries one; permissions granted without rules take the deployment's implicit transform
/// (`--implicit-transform`).
///
/// Ordered by what it shows: `Redact < Mask < Reveal`. No caller can give an application a
/// transform that shows more than its own on the same containers (docs/api.md, "No
/// escalation").
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DataTransform {
    /// No `data` member.
    Redact,
    /// The token's rendered mask (its type's default when it names none), or no `data`
    /// member when it has none.
    Mask,
    /// The plaintext. A rule that names no transform reveals, as every rule did before
    /// transforms existed (docs/api.md, "Transforms").
    #[default]
    Reveal,
}

impl DataTransform {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DataTransform::Redact => "redact",
            DataTransform::Mask => "mask",
            DataTransform::Reveal => "reveal",
        }
    }
}

impl fmt::Display for DataTransform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string named no transform.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown transform `{0}`: expected reveal, mask or redact")]
pub struct UnknownTransform(pub String);

impl FromStr for DataTransform {
    type Err = UnknownTransform;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            DataTransform::Redact,
            DataTransform::Mask,
            DataTransform::Reveal,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
        .ok_or_else(|| UnknownTransform(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_by_what_they_show() {
        for t in [
            DataTransform::Redact,
            DataTransform::Mask,
            DataTransform::Reveal,
        ] {
            assert_eq!(t.as_str().parse::<DataTransform>().expect("parse"), t);
            let json = serde_json::to_string(&t).expect("ser");
            assert_eq!(json, format!("\"{t}\""));
        }
        assert!(DataTransform::Redact < DataTransform::Mask);
        assert!(DataTransform::Mask < DataTransform::Reveal);
        assert_eq!(DataTransform::default(), DataTransform::Reveal);
        assert!("REVEAL".parse::<DataTransform>().is_err());
        assert!(serde_json::from_str::<DataTransform>("\"show\"").is_err());
    }
}
