//! The token lists' filters: `GET /tokens` and the children list (`id`, `type`, metadata),
//! and `GET /v2/tokens` (`type`, `container`, `fingerprint`, metadata, a cursor).

use tessera_domain::{
    cursor::CursorRequest,
    search::{TokenSearchRequest, ValidWalk},
    store::TokenFilter,
    validation::{has_nul, NUL_MESSAGE},
    PageRequest, TokenId, TokenType, ValidationErrors,
};

use super::{finish_page, first_time, parse_int, PageParams};
use crate::problem::ApiError;

/// The token-list filters [`token_list`] accepts besides [`PageParams`], as documented and as
/// parsed. Up to 10 metadata pairs may be added; they AND together and match exactly.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TokenListParams {
    /// Only these ids (repeat the key for several).
    #[param(style = Form, explode, value_type = Option<Vec<String>>)]
    id: Vec<TokenId>,
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline, value_type = Option<Vec<TokenType>>)]
    token_type: Vec<TokenType>,
    /// Only tokens whose metadata holds each of these pairs, exactly (at most 10):
    /// `metadata[<key>]=<value>`, or equally `metadata.<key>=<value>`.
    #[param(style = DeepObject, explode, value_type = Option<std::collections::BTreeMap<String, String>>)]
    metadata: Vec<(String, String)>,
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
    let (mut params, mut paging) = (TokenListParams::default(), PageParams::default());
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => paging.take(&key, &value),
            "id" => match value.parse::<TokenId>() {
                Ok(id) => params.id.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not a token id")),
            },
            "type" => match TokenType::parse(&value) {
                Some(t) => params.token_type.push(t),
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
                    params
                        .metadata
                        .push((meta_key.to_string(), value.into_owned()));
                }
                _ => errors.add(k.to_string(), "is not a known query parameter"),
            },
        }
    }
    tessera_domain::metadata::bound_filter(params.metadata.len(), "metadata", &mut errors);
    let request = finish_page(&paging, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(TokenListQuery {
        filter: TokenFilter {
            ids: params.id,
            types: params.token_type,
            metadata: params.metadata,
            ..TokenFilter::default()
        },
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}

/// The query of `GET /v2/tokens` [`token_list_v2`] accepts, as documented and as parsed.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TokenListV2Params {
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline, value_type = Option<Vec<TokenType>>)]
    token_type: Vec<TokenType>,
    /// A container path the token's container must start with (`/pci/` matches `/pci/high/`).
    container: Option<String>,
    /// The fingerprint a token must have (64 hexadecimal digits).
    fingerprint: Option<String>,
    /// Exact metadata pairs, all of which must be present (at most 10), as a JSON object of
    /// strings: `metadata={"customer":"c_42"}` (URL-encoded), as Basis Theory's node SDK sends
    /// it. `metadata.<key>=<value>` and `metadata[<key>]=<value>` are accepted too.
    #[param(value_type = Option<String>)]
    metadata: tessera_domain::metadata::Metadata,
    /// The cursor a previous page answered as `pagination.next`; absent: the first page.
    start: Option<String>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20, value_type = Option<u32>)]
    size: Option<i64>,
}

/// Parses a `GET /v2/tokens` query into criteria (checked as `POST /tokens/search` checks
/// them) and a cursor page.
pub(crate) fn token_list_v2(query: &str) -> Result<ValidWalk, ApiError> {
    let mut params = TokenListV2Params::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "type" => match TokenType::parse(&value) {
                Some(t) => params.token_type.push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not a token type ({})", TokenType::NAMES),
                ),
            },
            "container" if first_time(params.container.is_some(), "container", &mut errors) => {
                params.container = Some(value.into_owned());
            }
            "fingerprint"
                if first_time(params.fingerprint.is_some(), "fingerprint", &mut errors) =>
            {
                params.fingerprint = Some(value.into_owned());
            }
            "start" if first_time(params.start.is_some(), "start", &mut errors) => {
                params.start = Some(value.into_owned());
            }
            "size" if first_time(params.size.is_some(), "size", &mut errors) => {
                params.size = Some(parse_int(&value).unwrap_or(i64::MIN));
            }
            "metadata" => {
                match serde_json::from_str::<tessera_domain::metadata::Metadata>(&value) {
                    Ok(pairs) => params.metadata.extend(pairs),
                    Err(_) => errors.add("metadata", "must be a JSON object of strings"),
                }
            }
            "container" | "fingerprint" | "start" | "size" => {}
            k => match metadata_key(k) {
                Some(meta_key) if !meta_key.is_empty() => {
                    params
                        .metadata
                        .insert(meta_key.to_string(), value.into_owned());
                }
                _ => errors.add(k.to_string(), "is not a known query parameter"),
            },
        }
    }
    let input = TokenSearchRequest {
        types: (!params.token_type.is_empty()).then_some(params.token_type),
        container: params.container,
        fingerprint: params.fingerprint,
        metadata: (!params.metadata.is_empty()).then_some(params.metadata),
        size: params.size,
        ..TokenSearchRequest::default()
    };
    let valid = input.validate();
    if let Err(e) = &valid {
        errors.extend_under("", e.clone());
    }
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    let valid = valid.map_err(|e| ApiError::validation(&e))?;
    Ok(ValidWalk {
        search: valid.search,
        page: CursorRequest {
            start: params.start,
            size: valid.page.size(),
        },
    })
}
