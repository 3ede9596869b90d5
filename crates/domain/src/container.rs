//! Containers: slash-delimited paths (`/pci/high/`) that group tokens for permission rules.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// Longest container path accepted, in bytes (all accepted characters are ASCII).
pub const MAX_CONTAINER_LEN: usize = 200;

/// A normalised container path: starts and ends with `/`, segments of `[a-z0-9_-]`.
///
/// Upper case is accepted on input and stored lowercased. The root `/` is a valid *rule*
/// container (it matches everything) but tokens must live in a container with at least one
/// segment; see [`Container::parse_for_token`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(
        description = "A container path: starts and ends with `/`, segments of `[a-z0-9_-]` \
            (upper case is stored lowercased). `/` alone is valid only in rules.",
        example = "/pci/high/",
        pattern = "^/([A-Za-z0-9_-]+/)*$"
    )
)]
#[serde(transparent)]
pub struct Container(String);

/// Why a string is not a container path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContainerError {
    /// The path does not start and end with `/`.
    #[error("must start and end with `/`")]
    Slashes,
    /// A segment is empty (`//`) or holds a character outside `[a-z0-9_-]`.
    #[error("segments must be non-empty and contain only a-z, 0-9, `_` and `-`")]
    Segment,
    /// The path is longer than [`MAX_CONTAINER_LEN`].
    #[error("must be at most {MAX_CONTAINER_LEN} characters")]
    TooLong,
    /// The root `/` where a token container is needed.
    #[error("must name at least one segment, e.g. `/general/`")]
    Root,
}

impl Container {
    /// Parses and lowercases a container path; the root `/` is accepted.
    pub fn parse(raw: &str) -> Result<Self, ContainerError> {
        if raw.len() > MAX_CONTAINER_LEN {
            return Err(ContainerError::TooLong);
        }
        if raw == "/" {
            return Ok(Self::root());
        }
        let inner = raw
            .strip_prefix('/')
            .and_then(|s| s.strip_suffix('/'))
            .ok_or(ContainerError::Slashes)?;
        let valid_segment = |seg: &str| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        if !inner.split('/').all(valid_segment) {
            return Err(ContainerError::Segment);
        }
        Ok(Self(raw.to_ascii_lowercase()))
    }

    /// Parses a container a token can be stored in (not the root).
    pub fn parse_for_token(raw: &str) -> Result<Self, ContainerError> {
        let c = Self::parse(raw)?;
        if c.is_root() {
            return Err(ContainerError::Root);
        }
        Ok(c)
    }

    /// The root container `/`, prefix of every container.
    pub fn root() -> Self {
        Self("/".to_string())
    }

    /// True for `/`.
    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// True when `self` is `other` or one of its ancestors (`/pci/` contains `/pci/high/`).
    ///
    /// Both paths end with `/`, so a plain string prefix test respects segment boundaries:
    /// `/pci/` is not a prefix of `/pcix/`.
    pub fn contains(&self, other: &Container) -> bool {
        other.0.starts_with(&self.0)
    }

    /// The normalised path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Container {
    type Err = ContainerError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl<'de> Deserialize<'de> for Container {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Container::parse(&raw).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_lowercases() {
        assert_eq!(
            Container::parse("/PCI/High/").expect("ok").as_str(),
            "/pci/high/"
        );
        assert_eq!(Container::parse("/a_b-1/").expect("ok").as_str(), "/a_b-1/");
        assert!(Container::parse("/").expect("root").is_root());
    }

    #[test]
    fn rejects_malformed_paths() {
        assert_eq!(Container::parse("pci/"), Err(ContainerError::Slashes));
        assert_eq!(Container::parse("/pci"), Err(ContainerError::Slashes));
        assert_eq!(Container::parse(""), Err(ContainerError::Slashes));
        assert_eq!(Container::parse("/pci//x/"), Err(ContainerError::Segment));
        assert_eq!(Container::parse("/p c/"), Err(ContainerError::Segment));
        assert_eq!(Container::parse("/pci/é/"), Err(ContainerError::Segment));
        assert_eq!(Container::parse("/../"), Err(ContainerError::Segment));
        let long = format!("/{}/", "a".repeat(MAX_CONTAINER_LEN));
        assert_eq!(Container::parse(&long), Err(ContainerError::TooLong));
        assert_eq!(Container::parse_for_token("/"), Err(ContainerError::Root));
    }

    #[test]
    fn containment_respects_segment_boundaries() {
        let pci = Container::parse("/pci/").expect("ok");
        let high = Container::parse("/pci/high/").expect("ok");
        let pcix = Container::parse("/pcix/").expect("ok");
        assert!(pci.contains(&high));
        assert!(pci.contains(&pci));
        assert!(!pci.contains(&pcix));
        assert!(!high.contains(&pci));
        assert!(Container::root().contains(&pcix));
    }
}
