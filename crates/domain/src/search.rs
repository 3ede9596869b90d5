//! The bodies of `POST /tokens/search` and `POST /v2/tokens/search`, and their validation into
//! a [`TokenSearch`]: the structured criteria, and the `query` string ([`query`]) mapped onto
//! the same criteria, so one query path serves both (docs/api.md "Search query").

pub mod query;

use serde::Deserialize;

use crate::{
    container::Container, cursor::CursorRequest, metadata::Metadata, pagination::PageRequest,
    store::TokenSearch, timestamp, token::TokenType, validation::ValidationErrors,
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
    /// A query string, `field:value` terms joined by `AND` (docs/api.md "Search query").
    /// Not with `metadata`, `type`, `fingerprint` or `container`, which it expresses itself;
    /// it ANDs with the others.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(example = "type:card AND metadata.customer:c_42")
    )]
    pub query: Option<String>,
    /// Refused when given: cursor pages are `POST /v2/tokens/search`; this search takes
    /// `page`. Accepted as `null`, which the SDKs may send.
    #[serde(default)]
    pub start: Option<String>,
}

/// The body of `POST /v2/tokens/search`: a query and a cursor page.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({
    "query": "type:card AND metadata.customer:c_42",
    "size": 20
})))]
#[serde(deny_unknown_fields)]
pub struct TokenSearchV2Request {
    /// A query string, `field:value` terms joined by `AND` (docs/api.md "Search query");
    /// absent or empty: every token the caller may read.
    #[serde(default)]
    pub query: Option<String>,
    /// The cursor a previous page answered as `pagination.next`; absent: the first page.
    #[serde(default)]
    pub start: Option<String>,
    /// Page size, 1–100 (default 20).
    #[serde(default)]
    pub size: Option<i64>,
}

/// A validated cursor search: criteria and the page asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidWalk {
    /// The criteria.
    pub search: TokenSearch,
    /// Which page.
    pub page: CursorRequest,
}

impl TokenSearchV2Request {
    /// Checks the query and the size, reporting both at once under their field names.
    pub fn validate(self) -> Result<ValidWalk, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let size = cursor_size(self.size, &mut errors);
        let search = match query::parse(self.query.as_deref().unwrap_or_default()) {
            Ok(search) => Some(search),
            Err(e) => {
                errors.add("query", e.to_string());
                None
            }
        };
        errors.into_result()?;
        Ok(ValidWalk {
            search: search.unwrap_or_default(),
            page: CursorRequest {
                start: self.start,
                size,
            },
        })
    }
}

/// A cursor page's `size` (1–100, default 20), as [`PageRequest`] checks it.
pub fn cursor_size(size: Option<i64>, errors: &mut ValidationErrors) -> u32 {
    match PageRequest::new(None, size) {
        Ok(p) => p.size(),
        Err(e) => {
            errors.extend_under("", e);
            0
        }
    }
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
        let structured = TokenSearch {
            live_at: None,
            ids: Vec::new(),
            metadata: metadata.into_iter().collect(),
            types: self.types.unwrap_or_default(),
            fingerprint,
            container_prefix,
            created_after,
            created_before,
            destinations,
            data: Vec::new(),
            data_hashes: Vec::new(),
        };
        if self.start.is_some() {
            errors.add(
                "start",
                "cursor pages are POST /v2/tokens/search; this search pages with `page`",
            );
        }
        let search = with_query(structured, self.query.as_deref(), &mut errors);
        errors.into_result()?;
        Ok(ValidSearch {
            search,
            page: page.unwrap_or_default(),
            include_data: self.include_data,
        })
    }
}

/// `structured` with the criteria of `query` added (AND), when there is one. The query may
/// not repeat a criterion it can express (metadata, type, fingerprint, container): two ways
/// of saying one thing would leave open which wins, so that is a 400 naming `query`.
fn with_query(
    structured: TokenSearch,
    query: Option<&str>,
    errors: &mut ValidationErrors,
) -> TokenSearch {
    let Some(query) = query else {
        return structured;
    };
    if !structured.metadata.is_empty()
        || !structured.types.is_empty()
        || structured.fingerprint.is_some()
        || structured.container_prefix.is_some()
    {
        errors.add(
            "query",
            "cannot be combined with `metadata`, `type`, `fingerprint` or `container`: put them in the query",
        );
        return structured;
    }
    match query::parse(query) {
        Ok(parsed) => TokenSearch {
            ids: parsed.ids,
            metadata: parsed.metadata,
            types: parsed.types,
            fingerprint: parsed.fingerprint,
            container_prefix: parsed.container_prefix,
            data: parsed.data,
            ..structured
        },
        Err(e) => {
            errors.add("query", e.to_string());
            structured
        }
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
    fn a_query_ands_with_the_criteria_it_cannot_express() {
        let v = parse(r#"{"query": "type:card AND metadata.a:b", "created_after": "2026-01-01T00:00:00Z", "include_data": true, "start": null}"#)
            .expect("valid");
        assert_eq!(v.search.types, vec![TokenType::Card]);
        assert_eq!(v.search.metadata, vec![("a".to_string(), "b".to_string())]);
        assert!(v.search.created_after.is_some() && v.include_data);
        for (body, field) in [
            (r#"{"query": "type:card", "type": ["card"]}"#, "query"),
            (
                r#"{"query": "metadata.a:b", "metadata": {"a": "b"}}"#,
                "query",
            ),
            (r#"{"query": "enrichments:4242"}"#, "query"),
            (r#"{"query": "type:card", "start": "AgAAAA"}"#, "start"),
        ] {
            assert_eq!(parse(body).expect_err(body), vec![field], "{body}");
        }
    }

    #[test]
    fn a_v2_search_is_a_query_and_a_cursor_page() {
        let v2 = |body: &str| {
            serde_json::from_str::<TokenSearchV2Request>(body)
                .map_err(|e| vec![e.to_string()])?
                .validate()
                .map_err(|e| e.fields().keys().cloned().collect::<Vec<_>>())
        };
        let v = v2(r#"{"query": "type:bank", "start": "abc", "size": 3}"#).expect("valid");
        assert_eq!(v.search.types, vec![TokenType::Bank]);
        assert_eq!(
            v.page,
            CursorRequest {
                start: Some("abc".into()),
                size: 3
            }
        );
        let v = v2("{}").expect("empty");
        assert_eq!((v.search, v.page.size), (TokenSearch::default(), 20));
        assert_eq!(
            v2(r#"{"query": "OR", "size": 0}"#).expect_err("bad"),
            vec!["query", "size"]
        );
        assert!(v2(r#"{"page": 1}"#).is_err(), "no offset pages here");
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(parse(r#"{"metadata": {}, "colour": "red"}"#).is_err());
    }
}
