//! The answers of audited management calls: a status, the JSON view, and the action the audit
//! middleware records for the ids — one line in each handler instead of a block in each.

use actix_web::HttpResponse;
use serde::Serialize;
use tessera_domain::audit::{AuditAction, ResourceId};

use crate::{audit::mark, problem::ApiError};

/// The answer of a handler.
pub(super) type Answer = Result<HttpResponse, ApiError>;

/// 201 with `view`, recording `action` on `ids`.
pub(super) fn created(
    view: impl Serialize,
    action: AuditAction,
    ids: impl IntoIterator<Item = impl Into<ResourceId>>,
) -> Answer {
    Ok(mark(HttpResponse::Created().json(view), action, ids))
}

/// 200 with `view`, recording `action` on `ids`.
pub(super) fn ok(
    view: impl Serialize,
    action: AuditAction,
    ids: impl IntoIterator<Item = impl Into<ResourceId>>,
) -> Answer {
    Ok(mark(HttpResponse::Ok().json(view), action, ids))
}

/// 204, recording `action` on `ids`.
pub(super) fn no_content(
    action: AuditAction,
    ids: impl IntoIterator<Item = impl Into<ResourceId>>,
) -> Answer {
    Ok(mark(HttpResponse::NoContent().finish(), action, ids))
}
