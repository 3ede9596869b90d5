//! The proxy list's filters: `id`, `name`.

use tessera_domain::{
    proxy::name_like_pattern,
    store::ProxyFilter,
    validation::{has_nul, NUL_MESSAGE},
    PageRequest, ProxyId, ValidationErrors,
};

use super::{finish_page, PageParams};
use crate::problem::ApiError;

/// The proxy-list filters [`proxy_list`] accepts besides [`PageParams`], as documented and
/// as parsed.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ProxyListParams {
    /// Only these ids (repeat the key for several).
    #[param(style = Form, explode, value_type = Option<Vec<uuid::Uuid>>)]
    id: Vec<ProxyId>,
    /// Case-insensitive substring of the name; `*` matches any run of characters.
    name: Option<String>,
}

/// A parsed proxy-list query.
#[derive(Debug, Clone)]
pub(crate) struct ProxyListQuery {
    /// Filters.
    pub filter: ProxyFilter,
    /// Page.
    pub page: PageRequest,
}

/// Parses a proxy-list query: `id` (repeatable), `name` (case-insensitive substring, `*`
/// matches any run), `page`, `size`.
pub(crate) fn proxy_list(query: &str) -> Result<ProxyListQuery, ApiError> {
    let (mut params, mut paging) = (ProxyListParams::default(), PageParams::default());
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => paging.take(&key, &value),
            "id" => match value.parse::<ProxyId>() {
                Ok(id) => params.id.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not a proxy id")),
            },
            "name" if params.name.is_some() => errors.add("name", "may be given once"),
            "name" if has_nul(&value) => errors.add("name", NUL_MESSAGE),
            "name" => params.name = Some(value.into_owned()),
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    let request = finish_page(&paging, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(ProxyListQuery {
        filter: ProxyFilter {
            ids: params.id,
            name_like: params.name.as_deref().map(name_like_pattern),
        },
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}
