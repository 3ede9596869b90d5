//! The application list's filters: `id`, `type`.

use tessera_domain::{store::ApplicationFilter, PageRequest, ValidationErrors};

use super::{finish_page, PageParams};
use crate::problem::ApiError;

/// The application-list filters [`application_list`] accepts besides [`PageParams`], as
/// documented and as parsed.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ApplicationListParams {
    /// Only these ids (repeat the key for several; at most 100).
    #[param(style = Form, explode, value_type = Option<Vec<uuid::Uuid>>)]
    id: Vec<tessera_domain::ApplicationId>,
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline, value_type = Option<Vec<tessera_domain::ApplicationType>>)]
    app_type: Vec<tessera_domain::ApplicationType>,
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
    let (mut params, mut paging) = (ApplicationListParams::default(), PageParams::default());
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => paging.take(&key, &value),
            "id" => match value.parse::<tessera_domain::ApplicationId>() {
                Ok(id) => params.id.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not an application id")),
            },
            "type" => match tessera_domain::ApplicationType::parse(&value) {
                Some(t) => params.app_type.push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not an application type (private, public, management)"),
                ),
            },
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    if params.id.len() > MAX_APPLICATION_IDS {
        errors.add(
            "id",
            format!("may be given at most {MAX_APPLICATION_IDS} times"),
        );
    }
    let request = finish_page(&paging, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(ApplicationListQuery {
        filter: ApplicationFilter {
            ids: params.id,
            types: params.app_type,
        },
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}
