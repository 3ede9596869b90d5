//! `/console/audit`: the tenant's events with the API's filters (`GET /audit-events`:
//! action, actor, outcome, resource, time range, pages; the same parameter names and
//! messages), and Verify (the tenant's chain, `audit:read`).

use actix_web::{http::StatusCode, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditFilter, Outcome, VerifyReport},
    timestamp, PageRequest, ValidationErrors,
};

use super::query;
use crate::{
    context::{Ctx, Posted},
    names::Names,
    views::{
        audit::{self, AuditForm},
        components::Problems,
        Section,
    },
};

const SECTION: Section = Section::Audit;

/// The filters and page of the query, or their problems.
fn parse(
    req: &HttpRequest,
) -> (
    AuditForm,
    Result<(AuditFilter, PageRequest), ValidationErrors>,
) {
    let q = query(req);
    let form = AuditForm {
        action: q.get("action").trim().to_string(),
        actor: q.get("actor").trim().to_string(),
        outcome: q.get("outcome").trim().to_string(),
        resource_id: q.get("resource_id").trim().to_string(),
        from: q.get("from").trim().to_string(),
        to: q.get("to").trim().to_string(),
    };
    let mut errors = ValidationErrors::new();
    let mut filter = AuditFilter::default();
    if !form.action.is_empty() {
        match form.action.parse::<AuditAction>() {
            Ok(a) => filter.actions.push(a),
            Err(e) => errors.add("action", e.to_string()),
        }
    }
    if !form.actor.is_empty() {
        match Actor::parse(&form.actor) {
            Some(a) => filter.actor = Some(a),
            None => errors.add(
                "actor",
                format!(
                    "`{}` is not an application id, `anonymous` or `operator`",
                    form.actor
                ),
            ),
        }
    }
    if !form.outcome.is_empty() {
        match Outcome::parse(&form.outcome) {
            Some(o) => filter.outcome = Some(o),
            None => errors.add("outcome", "must be `success` or `denied`"),
        }
    }
    if !form.resource_id.is_empty() {
        match form.resource_id.parse() {
            Ok(id) => filter.resource_id = Some(id),
            Err(_) => errors.add(
                "resource_id",
                format!("`{}` is not an id", form.resource_id),
            ),
        }
    }
    for (name, raw, slot) in [
        ("from", &form.from, &mut filter.from),
        ("to", &form.to, &mut filter.to),
    ] {
        if !raw.is_empty() {
            match timestamp::parse(raw) {
                Some(at) => *slot = Some(at),
                None => errors.add(name, "must be an RFC 3339 date-time"),
            }
        }
    }
    if let (Some(from), Some(to)) = (filter.from, filter.to) {
        if from > to {
            errors.add("from", "must not be after `to`");
        }
    }
    let number = |n: &str| q.opt(n).map(|v| v.parse::<i64>().unwrap_or(0));
    let page = PageRequest::new(number("page"), number("size"));
    let result = match (errors.into_result(), page) {
        (Ok(()), Ok(page)) => Ok((filter, page)),
        (Err(mut e), Err(p)) => {
            e.extend_under("", p);
            Err(e)
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    (form, result)
}

async fn render(ctx: &Ctx, req: &HttpRequest, report: Option<&VerifyReport>) -> HttpResponse {
    let (form, parsed) = parse(req);
    let token = ctx.session.csrf.expose();
    let (filter, page) = match parsed {
        Ok(p) => p,
        Err(e) => {
            let body = audit::page(
                token,
                &form,
                None,
                &Problems::from_fields(&e),
                report,
                &Names::none(),
            );
            return ctx.page(StatusCode::BAD_REQUEST, SECTION, "Audit trail", body);
        }
    };
    let result = ctx
        .state
        .vault
        .list_audit_events(&ctx.principal, &filter, page)
        .await;
    match ctx.unaudited(SECTION, result) {
        Ok(events) => {
            let names = ctx.names(audit::actors(&events)).await;
            let body = audit::page(
                token,
                &form,
                Some(&events),
                &Problems::none(),
                report,
                &names,
            );
            ctx.ok(SECTION, "Audit trail", body)
        }
        Err(refusal) => refusal.into_response(ctx, SECTION),
    }
}

/// `GET /console/audit`.
pub(crate) async fn list(ctx: Ctx, req: HttpRequest) -> HttpResponse {
    render(&ctx, &req, None).await
}

/// `POST /console/audit/verify`: the tenant's chain re-walked, shown above the events.
pub(crate) async fn verify(posted: Posted, req: HttpRequest) -> HttpResponse {
    let ctx = posted.ctx;
    let result = ctx.state.vault.verify_own_audit(&ctx.principal).await;
    match ctx.unaudited(SECTION, result) {
        Ok(report) => render(&ctx, &req, Some(&report)).await,
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}
