//! The audit trail's filters: action, outcome, actor, resource, time range.

use tessera_domain::{
    audit::{Actor, AuditAction, AuditFilter, Outcome},
    timestamp, PageRequest, ValidationErrors,
};

use super::{finish_page, page_param};
use crate::problem::ApiError;

/// The audit-event filters [`audit_list`] accepts besides [`PageParams`] (OpenAPI description
/// only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct AuditListParams {
    /// Only these actions, e.g. `token.read` (repeat the key for several).
    #[param(style = Form, explode)]
    action: Option<Vec<String>>,
    /// Only events naming this token, application or proxy.
    resource_id: Option<String>,
    /// Only events by this application id, or `anonymous`.
    actor: Option<String>,
    /// `success` or `denied`.
    outcome: Option<String>,
    /// Events at or after this instant (RFC 3339).
    from: Option<String>,
    /// Events before this instant (RFC 3339).
    to: Option<String>,
}

/// A parsed audit-event query.
#[derive(Debug, Clone)]
pub(crate) struct AuditListQuery {
    /// Filters.
    pub filter: AuditFilter,
    /// Page.
    pub page: PageRequest,
}

/// Parses an audit-event query: `action` (repeatable), `resource_id`, `actor`, `outcome`,
/// `from`, `to`, `page`, `size`.
pub(crate) fn audit_list(query: &str) -> Result<AuditListQuery, ApiError> {
    let (mut page, mut size) = (None, None);
    let mut filter = AuditFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        let once = |present: bool, errors: &mut ValidationErrors| {
            if present {
                errors.add(key.to_string(), "may be given once");
            }
            !present
        };
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "action" => match value.parse::<AuditAction>() {
                Ok(action) => filter.actions.push(action),
                Err(e) => errors.add("action", e.to_string()),
            },
            "resource_id" if once(filter.resource_id.is_some(), &mut errors) => {
                match value.parse() {
                    Ok(id) => filter.resource_id = Some(id),
                    Err(_) => errors.add("resource_id", format!("`{value}` is not an id")),
                }
            }
            "actor" if once(filter.actor.is_some(), &mut errors) => match Actor::parse(&value) {
                Some(actor) => filter.actor = Some(actor),
                None => errors.add(
                    "actor",
                    format!("`{value}` is not an application id, `anonymous` or `operator`"),
                ),
            },
            "outcome" if once(filter.outcome.is_some(), &mut errors) => {
                match Outcome::parse(&value) {
                    Some(outcome) => filter.outcome = Some(outcome),
                    None => errors.add("outcome", "must be `success` or `denied`"),
                }
            }
            "from" if once(filter.from.is_some(), &mut errors) => match timestamp::parse(&value) {
                Some(at) => filter.from = Some(at),
                None => errors.add("from", "must be an RFC 3339 date-time"),
            },
            "to" if once(filter.to.is_some(), &mut errors) => match timestamp::parse(&value) {
                Some(at) => filter.to = Some(at),
                None => errors.add("to", "must be an RFC 3339 date-time"),
            },
            "resource_id" | "actor" | "outcome" | "from" | "to" => {}
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    if let (Some(from), Some(to)) = (filter.from, filter.to) {
        if from > to {
            errors.add("from", "must not be after `to`");
        }
    }
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(AuditListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}
