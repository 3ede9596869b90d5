//! The webhook list takes `page` and `size` only.

use tessera_domain::{PageRequest, ValidationErrors};

use super::{finish_page, PageParams};
use crate::problem::ApiError;

/// Parses a webhook-list query: `page`, `size`.
pub(crate) fn webhook_list(query: &str) -> Result<PageRequest, ApiError> {
    let mut paging = PageParams::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => paging.take(&key, &value),
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    let request = finish_page(&paging, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    request.ok_or_else(|| ApiError::field("page", "invalid"))
}
