//! The application list's filters: `id`, `type`.

use tessera_domain::{store::ApplicationFilter, PageRequest, ValidationErrors};

use super::{finish_page, page_param};
use crate::problem::ApiError;

/// The application-list filters [`application_list`] accepts besides [`PageParams`] (OpenAPI
/// description only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct ApplicationListParams {
    /// Only these ids (repeat the key for several; at most 100).
    #[param(style = Form, explode)]
    id: Option<Vec<uuid::Uuid>>,
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline)]
    app_type: Option<Vec<tessera_domain::ApplicationType>>,
}

/// Most `id` filters an application list takes.
pub(super) const MAX_APPLICATION_IDS: usize = 100;

/// A parsed application-list query.
#[derive(Debug, Clone)]
pub(crate) struct ApplicationListQuery {
    /// Filters.
    pub filter: ApplicationFilter,
    /// Page.
    pub page: PageRequest,
}

/// Parses an application-list query: `id` and `type` (each repeatable, as Basis Theory's SDKs
/// send them), `page`, `size`.
pub(crate) fn application_list(query: &str) -> Result<ApplicationListQuery, ApiError> {
    let (mut page, mut size) = (None, None);
    let mut filter = ApplicationFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "id" => match value.parse::<tessera_domain::ApplicationId>() {
                Ok(id) => filter.ids.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not an application id")),
            },
            "type" => match tessera_domain::ApplicationType::parse(&value) {
                Some(t) => filter.types.push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not an application type (private, public, management)"),
                ),
            },
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    if filter.ids.len() > MAX_APPLICATION_IDS {
        errors.add(
            "id",
            format!("may be given at most {MAX_APPLICATION_IDS} times"),
        );
    }
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(ApplicationListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}
