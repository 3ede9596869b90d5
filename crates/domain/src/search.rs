//! The body of `POST /tokens/search` and its validation into a [`TokenSearch`].

use serde::Deserialize;

use crate::{
    container::Container, metadata::Metadata, pagination::PageRequest, store::TokenSearch,
    timestamp, token::TokenType, validation::ValidationErrors,
};

/// Criteria of a token search; all given must hold. Results are newest first.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "metadata": {"customer": "c_42"},
    "type": ["card"],
    "container": "/pci/",
    "created_after": "2026-01-01T00:00:00Z",
    "page": 1,
    "size": 20
})))]
#[serde(deny_unknown_fields)]
pub struct TokenSearchRequest {
    /// Exact metadata pairs, all of which must be present.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<std::collections::BTreeMap<String, String>>)
    )]
    pub metadata: Option<Metadata>,
    /// Token types, any of which may match.
    #[serde(rename = "type", default)]
    pub types: Option<Vec<TokenType>>,
    /// The fingerprint a token must have.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// A container path the token's container must start with (`/pci/` matches `/pci/high/`).
    #[serde(default)]
    pub container: Option<String>,
    /// Only tokens created strictly after this time (RFC 3339).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub created_after: Option<String>,
    /// Only tokens created strictly before this time (RFC 3339).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub created_before: Option<String>,
    /// Destination patterns (as they were given to tokens, e.g. `*.openai.com`), every one
    /// of which a token's binding must hold.
    #[serde(default)]
    pub destinations: Option<Vec<String>>,
    /// Page number, ≥ 1 (default 1).
    #[serde(default)]
    pub page: Option<i64>,
    /// Page size, 1–100 (default 20).
    #[serde(default)]
    pub size: Option<i64>,
    /// Include each token's `data` (default `false`).
    #[serde(default)]
    pub include_data: bool,
}

/// A validated search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidSearch {
    /// The criteria.
    pub search: TokenSearch,
    /// Which page.
    pub page: PageRequest,
    /// Whether results carry `data`.
    pub include_data: bool,
}

impl TokenSearchRequest {
    /// Checks every criterion, reporting all problems at once under their field names.
    pub fn validate(self) -> Result<ValidSearch, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let page = match PageRequest::new(self.page, self.size) {
            Ok(p) => Some(p),
            Err(e) => {
                errors.extend_under("", e);
                None
            }
        };
        let container_prefix = match self.container.as_deref().map(Container::parse) {
            None => None,
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                errors.add("container", e.to_string());
                None
            }
        };
        let mut time = |field: &str, raw: Option<String>| match raw.as_deref().map(timestamp::parse)
        {
            None => None,
            Some(Some(ts)) => Some(ts),
            Some(None) => {
                errors.add(field, "must be an RFC 3339 timestamp with an offset");
                None
            }
        };
        let created_after = time("created_after", self.created_after);
        let created_before = time("created_before", self.created_before);
        let fingerprint = self.fingerprint.map(|fp| fp.to_ascii_lowercase());
        if fingerprint
            .as_deref()
            .is_some_and(|fp| fp.len() != 64 || !fp.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            errors.add("fingerprint", "must be 64 hexadecimal digits");
        }
        let destinations = self
            .destinations
            .as_deref()
            .and_then(|raw| {
                crate::binding::Destinations::validate(raw, "destinations", &mut errors)
            })
            .map(|d| d.patterns().map(str::to_string).collect())
            .unwrap_or_default();
        let metadata = self.metadata.unwrap_or_default();
        crate::metadata::validate(&metadata, &mut errors);
        crate::metadata::bound_filter(metadata.len(), "metadata", &mut errors);
        errors.into_result()?;
        Ok(ValidSearch {
            search: TokenSearch {
                live_at: None,
                metadata: metadata.into_iter().collect(),
                types: self.types.unwrap_or_default(),
                fingerprint,
                container_prefix,
                created_after,
                created_before,
                destinations,
            },
            page: page.unwrap_or_default(),
            include_data: self.include_data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<ValidSearch, Vec<String>> {
        serde_json::from_str::<TokenSearchRequest>(body)
            .map_err(|e| vec![e.to_string()])?
            .validate()
            .map_err(|e| e.fields().keys().cloned().collect())
    }

    #[test]
    fn an_empty_search_is_every_token_first_page() {
        let v = parse("{}").expect("valid");
        assert_eq!(v.page, PageRequest::default());
        assert!(!v.include_data);
        assert_eq!(v.search, TokenSearch::default());
    }

    #[test]
    fn criteria_are_checked_together() {
        assert_eq!(
            parse(r#"{"container": "pci", "created_after": "yesterday", "size": 101, "fingerprint": ""}"#)
                .expect_err("invalid"),
            vec!["container", "created_after", "fingerprint", "size"]
        );
        let v = parse(r#"{"container": "/PCI/", "type": ["card", "bank"], "metadata": {"a": "b"}, "include_data": true}"#)
            .expect("valid");
        assert_eq!(
            v.search.container_prefix.map(|c| c.as_str().to_string()),
            Some("/pci/".into())
        );
        assert_eq!(v.search.types, vec![TokenType::Card, TokenType::Bank]);
        assert_eq!(v.search.metadata, vec![("a".to_string(), "b".to_string())]);
        assert!(v.include_data);
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(parse(r#"{"metadata": {}, "colour": "red"}"#).is_err());
    }
}
