//! The token lists' filters: `GET /tokens` and the children list (`id`, `type`, metadata),
//! and `GET /v2/tokens` (`type`, `container`, `fingerprint`, metadata, a cursor).

use tessera_domain::{
    cursor::CursorRequest,
    search::{TokenSearchRequest, ValidWalk},
    store::TokenFilter,
    validation::{has_nul, NUL_MESSAGE},
    PageRequest, TokenId, TokenType, ValidationErrors,
};

use super::{finish_page, first_time, page_param, parse_int};
use crate::problem::ApiError;

/// The token-list filters [`token_list`] accepts besides [`PageParams`] (OpenAPI description
/// only). Up to 10 metadata pairs may be added; they AND together and match exactly.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct TokenListParams {
    /// Only these ids (repeat the key for several).
    #[param(style = Form, explode)]
    id: Option<Vec<String>>,
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline)]
    token_type: Option<Vec<TokenType>>,
    /// Only tokens whose metadata holds each of these pairs, exactly (at most 10):
    /// `metadata[<key>]=<value>`, or equally `metadata.<key>=<value>`.
    #[param(style = DeepObject, explode)]
    metadata: Option<std::collections::BTreeMap<String, String>>,
}

/// A parsed token-list query.
#[derive(Debug, Clone)]
pub(crate) struct TokenListQuery {
    /// Filters.
    pub filter: TokenFilter,
    /// Page.
    pub page: PageRequest,
}

/// The metadata key a token-list parameter filters on: `metadata.<key>`, or the deepObject
/// form `metadata[<key>]` that Basis Theory's Python SDK sends (everything between the first
/// `[` and the last `]` is the key, brackets included). `None` for any other parameter.
fn metadata_key(parameter: &str) -> Option<&str> {
    parameter.strip_prefix("metadata.").or_else(|| {
        parameter
            .strip_prefix("metadata[")
            .and_then(|rest| rest.strip_suffix(']'))
    })
}

/// Parses a token-list query.
pub(crate) fn token_list(query: &str) -> Result<TokenListQuery, ApiError> {
    let (mut page, mut size) = (None, None);
    let mut filter = TokenFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "id" => match value.parse::<TokenId>() {
                Ok(id) => filter.ids.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not a token id")),
            },
            "type" => match TokenType::parse(&value) {
                Some(t) => filter.types.push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not a token type ({})", TokenType::NAMES),
                ),
            },
            k => match metadata_key(k) {
                Some(meta_key) if has_nul(meta_key) || has_nul(&value) => {
                    errors.add("metadata", format!("filters {NUL_MESSAGE}"));
                }
                Some(meta_key) if !meta_key.is_empty() => {
                    filter
                        .metadata
                        .push((meta_key.to_string(), value.into_owned()));
                }
                _ => errors.add(k.to_string(), "is not a known query parameter"),
            },
        }
    }
    tessera_domain::metadata::bound_filter(filter.metadata.len(), "metadata", &mut errors);
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(TokenListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}

/// The query of `GET /v2/tokens` [`token_list_v2`] accepts (OpenAPI description only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct TokenListV2Params {
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline)]
    token_type: Option<Vec<TokenType>>,
    /// A container path the token's container must start with (`/pci/` matches `/pci/high/`).
    container: Option<String>,
    /// The fingerprint a token must have (64 hexadecimal digits).
    fingerprint: Option<String>,
    /// Exact metadata pairs, all of which must be present (at most 10), as a JSON object of
    /// strings: `metadata={"customer":"c_42"}` (URL-encoded), as Basis Theory's node SDK sends
    /// it. `metadata.<key>=<value>` and `metadata[<key>]=<value>` are accepted too.
    metadata: Option<String>,
    /// The cursor a previous page answered as `pagination.next`; absent: the first page.
    start: Option<String>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20)]
    size: Option<u32>,
}

/// Parses a `GET /v2/tokens` query into criteria (checked as `POST /tokens/search` checks
/// them) and a cursor page.
pub(crate) fn token_list_v2(query: &str) -> Result<ValidWalk, ApiError> {
    let mut input = TokenSearchRequest::default();
    let (mut start, mut size) = (None, None);
    let mut metadata = tessera_domain::metadata::Metadata::new();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "type" => match TokenType::parse(&value) {
                Some(t) => input.types.get_or_insert_with(Vec::new).push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not a token type ({})", TokenType::NAMES),
                ),
            },
            "container" if first_time(input.container.is_some(), "container", &mut errors) => {
                input.container = Some(value.into_owned());
            }
            "fingerprint"
                if first_time(input.fingerprint.is_some(), "fingerprint", &mut errors) =>
            {
                input.fingerprint = Some(value.into_owned());
            }
            "start" if first_time(start.is_some(), "start", &mut errors) => {
                start = Some(value.into_owned());
            }
            "size" if first_time(size.is_some(), "size", &mut errors) => {
                size = Some(parse_int(&value).unwrap_or(i64::MIN));
            }
            "metadata" => {
                match serde_json::from_str::<tessera_domain::metadata::Metadata>(&value) {
                    Ok(pairs) => metadata.extend(pairs),
                    Err(_) => errors.add("metadata", "must be a JSON object of strings"),
                }
            }
            "container" | "fingerprint" | "start" | "size" => {}
            k => match metadata_key(k) {
                Some(meta_key) if !meta_key.is_empty() => {
                    metadata.insert(meta_key.to_string(), value.into_owned());
                }
                _ => errors.add(k.to_string(), "is not a known query parameter"),
            },
        }
    }
    if !metadata.is_empty() {
        input.metadata = Some(metadata);
    }
    input.size = size;
    let valid = input.validate();
    if let Err(e) = &valid {
        errors.extend_under("", e.clone());
    }
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    let valid = valid.map_err(|e| ApiError::validation(&e))?;
    Ok(ValidWalk {
        search: valid.search,
        page: CursorRequest {
            start,
            size: valid.page.size(),
        },
    })
}
