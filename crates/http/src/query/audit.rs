//! The audit trail's filters: action, outcome, actor, resource, time range.

use tessera_domain::{
    audit::{Actor, AuditAction, AuditFilter, Outcome, ResourceId},
    timestamp, PageRequest, ValidationErrors,
};
use time::OffsetDateTime;

use super::{finish_page, PageParams};
use crate::problem::ApiError;

/// The audit-event filters [`audit_list`] accepts besides [`PageParams`], as documented and
/// as parsed.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AuditListParams {
    /// Only these actions, e.g. `token.read` (repeat the key for several).
    #[param(style = Form, explode, value_type = Option<Vec<String>>)]
    action: Vec<AuditAction>,
    /// Only events naming this token, application or proxy.
    #[param(value_type = Option<String>)]
    resource_id: Option<ResourceId>,
    /// Only events by this application id, or `anonymous`.
    #[param(value_type = Option<String>)]
    actor: Option<Actor>,
    /// `success` or `denied`.
    #[param(value_type = Option<String>)]
    outcome: Option<Outcome>,
    /// Events at or after this instant (RFC 3339).
    #[param(value_type = Option<String>)]
    from: Option<OffsetDateTime>,
    /// Events before this instant (RFC 3339).
    #[param(value_type = Option<String>)]
    to: Option<OffsetDateTime>,
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
    let (mut params, mut paging) = (AuditListParams::default(), PageParams::default());
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        let once = |present: bool, errors: &mut ValidationErrors| {
            if present {
                errors.add(key.to_string(), "may be given once");
            }
            !present
        };
        match key.as_ref() {
            "page" | "size" => paging.take(&key, &value),
            "action" => match value.parse::<AuditAction>() {
                Ok(action) => params.action.push(action),
                Err(e) => errors.add("action", e.to_string()),
            },
            "resource_id" if once(params.resource_id.is_some(), &mut errors) => {
                match value.parse() {
                    Ok(id) => params.resource_id = Some(id),
                    Err(_) => errors.add("resource_id", format!("`{value}` is not an id")),
                }
            }
            "actor" if once(params.actor.is_some(), &mut errors) => match Actor::parse(&value) {
                Some(actor) => params.actor = Some(actor),
                None => errors.add(
                    "actor",
                    format!("`{value}` is not an application id, `anonymous` or `operator`"),
                ),
            },
            "outcome" if once(params.outcome.is_some(), &mut errors) => {
                match Outcome::parse(&value) {
                    Some(outcome) => params.outcome = Some(outcome),
                    None => errors.add("outcome", "must be `success` or `denied`"),
                }
            }
            "from" if once(params.from.is_some(), &mut errors) => match timestamp::parse(&value) {
                Some(at) => params.from = Some(at),
                None => errors.add("from", "must be an RFC 3339 date-time"),
            },
            "to" if once(params.to.is_some(), &mut errors) => match timestamp::parse(&value) {
                Some(at) => params.to = Some(at),
                None => errors.add("to", "must be an RFC 3339 date-time"),
            },
            "resource_id" | "actor" | "outcome" | "from" | "to" => {}
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    if let (Some(from), Some(to)) = (params.from, params.to) {
        if from > to {
            errors.add("from", "must not be after `to`");
        }
    }
    let request = finish_page(&paging, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(AuditListQuery {
        filter: AuditFilter {
            actions: params.action,
            resource_id: params.resource_id,
            actor: params.actor,
            outcome: params.outcome,
            from: params.from,
            to: params.to,
        },
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}
