//! The proxy list's filters: `id`, `name`.

use tessera_domain::{
    proxy::name_like_pattern,
    store::ProxyFilter,
    validation::{has_nul, NUL_MESSAGE},
    PageRequest, ProxyId, ValidationErrors,
};

use super::{finish_page, page_param};
use crate::problem::ApiError;

/// The proxy-list filters [`proxy_list`] accepts besides [`PageParams`] (OpenAPI description
/// only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct ProxyListParams {
    /// Only these ids (repeat the key for several).
    #[param(style = Form, explode)]
    id: Option<Vec<uuid::Uuid>>,
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
    let (mut page, mut size) = (None, None);
    let mut filter = ProxyFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "id" => match value.parse::<ProxyId>() {
                Ok(id) => filter.ids.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not a proxy id")),
            },
            "name" if filter.name_like.is_some() => errors.add("name", "may be given once"),
            "name" if has_nul(&value) => errors.add("name", NUL_MESSAGE),
            "name" => filter.name_like = Some(name_like_pattern(&value)),
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(ProxyListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}
