//! `/console/applications`: list, create (key shown once), edit permissions and rules,
//! regenerate the key (shown once), delete (a 409 when proxies use it, explained).

use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::AuditAction, error::Resource, vault::IssuedKey, ApplicationId, PageRequest, VaultError,
};

use super::{path_id, query};
use crate::{
    audit::{Audit, Refusal},
    context::{Ctx, Posted},
    inputs::application::ApplicationForm,
    views::{
        applications,
        components::{confirm, Problems},
        see_other, Section,
    },
};

const SECTION: Section = Section::Applications;

fn not_found() -> VaultError {
    VaultError::NotFound(Resource::Application)
}

/// `GET /console/applications`.
pub(crate) async fn list(ctx: Ctx, req: HttpRequest) -> HttpResponse {
    let q = query(&req);
    let number = |n: &str| q.opt(n).map(|v| v.parse::<i64>().unwrap_or(0));
    let page = match PageRequest::new(number("page"), number("size")) {
        Ok(p) => p,
        Err(e) => return ctx.failure(SECTION, &VaultError::Validation(e)),
    };
    let result = ctx
        .state
        .vault
        .list_applications(&ctx.principal, page)
        .await;
    match ctx.unaudited(SECTION, result) {
        Ok(apps) => {
            let deleted = q.opt("deleted").map(str::to_string);
            ctx.ok(SECTION, "Applications", applications::list(&apps, deleted))
        }
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}

/// `GET /console/applications/new`.
pub(crate) async fn new_form(ctx: Ctx) -> HttpResponse {
    let body = applications::form(
        ctx.session.csrf.expose(),
        None,
        &ApplicationForm::blank(),
        &Problems::none(),
    );
    ctx.ok(SECTION, "New application", body)
}

/// `POST /console/applications/new`: creates it and shows its key once.
pub(crate) async fn create(posted: Posted) -> HttpResponse {
    let Posted { ctx, form } = posted;
    let form = ApplicationForm::read(&form);
    let result = match form.to_input() {
        Ok(input) => {
            ctx.state
                .vault
                .create_application(&ctx.principal, input)
                .await
        }
        Err(e) => Err(VaultError::Validation(e)),
    };
    let ids: Vec<_> = result.iter().map(|i| *i.application.id.as_uuid()).collect();
    let audit = Audit::done(AuditAction::ApplicationCreated, ids);
    match ctx.audited(SECTION, audit, result).await {
        Ok(issued) => shown_once(&ctx, StatusCode::CREATED, &issued, false),
        Err(Refusal::Invalid(problems)) => {
            let body = applications::form(ctx.session.csrf.expose(), None, &form, &problems);
            ctx.page(StatusCode::BAD_REQUEST, SECTION, "New application", body)
        }
        Err(Refusal::Page(page)) => *page,
    }
}

fn shown_once(
    ctx: &Ctx,
    status: StatusCode,
    issued: &IssuedKey,
    regenerated: bool,
) -> HttpResponse {
    let body = applications::key_once(&issued.application, issued.api_key.expose(), regenerated);
    let title = if regenerated {
        "Key regenerated"
    } else {
        "Application created"
    };
    ctx.page(status, SECTION, title, body)
}

/// `GET /console/applications/{id}`.
pub(crate) async fn page(ctx: Ctx, req: HttpRequest, id: web::Path<String>) -> HttpResponse {
    let Some(id) = path_id::<ApplicationId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let result = ctx.state.vault.get_application(&ctx.principal, id).await;
    match ctx.unaudited(SECTION, result) {
        Ok(app) => {
            let saved = query(&req).checked("saved");
            let form = ApplicationForm::of(&app);
            let names = ctx.names(applications::stamps_of(&app).ids()).await;
            let body = applications::page(
                ctx.session.csrf.expose(),
                &app,
                &form,
                &Problems::none(),
                &names,
                saved,
            );
            ctx.ok(SECTION, &format!("Application {}", app.name), body)
        }
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}

/// `POST /console/applications/{id}`: saves name, type, permissions and rules.
pub(crate) async fn update(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let Posted { ctx, form } = posted;
    let Some(id) = path_id::<ApplicationId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let form = ApplicationForm::read(&form);
    let result = match form.to_input() {
        Ok(input) => {
            ctx.state
                .vault
                .update_application(&ctx.principal, id, input)
                .await
        }
        Err(e) => Err(VaultError::Validation(e)),
    };
    let audit = Audit::done(AuditAction::ApplicationUpdated, [*id.as_uuid()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(_) => see_other(&format!("/console/applications/{id}?saved=1")),
        Err(Refusal::Invalid(problems)) => {
            let body = applications::form(ctx.session.csrf.expose(), Some(&id), &form, &problems);
            ctx.page(StatusCode::BAD_REQUEST, SECTION, "Edit application", body)
        }
        Err(Refusal::Page(page)) => *page,
    }
}

/// `GET /console/applications/{id}/regenerate`: the confirmation.
pub(crate) async fn confirm_regenerate(ctx: Ctx, id: web::Path<String>) -> HttpResponse {
    let Some(id) = path_id::<ApplicationId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let body = confirm(
        &format!("Issue a new key for application {id}? The current key stops working at once, for every caller that uses it."),
        &format!("/console/applications/{id}/regenerate"),
        "Regenerate key",
        &format!("/console/applications/{id}"),
        ctx.session.csrf.expose(),
    );
    ctx.ok(SECTION, "Regenerate key", body)
}

/// `POST /console/applications/{id}/regenerate`: the new key, shown once. Regenerating the
/// signed-in application's own key keeps the session, which then holds the new key.
pub(crate) async fn regenerate(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let ctx = posted.ctx;
    let Some(id) = path_id::<ApplicationId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let result = ctx
        .state
        .vault
        .regenerate_application_key(&ctx.principal, id)
        .await;
    let audit = Audit::done(AuditAction::ApplicationKeyRegenerated, [*id.as_uuid()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(issued) => {
            if id == ctx.principal.application_id() {
                // The session goes on with the new key; any other session of the old key ends.
                let rekeyed = ctx
                    .state
                    .vault
                    .rekey_console_session(&ctx.session, issued.api_key.expose())
                    .await;
                if let Err(e) = rekeyed {
                    tracing::warn!(request_id = %ctx.request_id, error = %e, "console session not re-keyed: it ends at its next request");
                }
            }
            shown_once(&ctx, StatusCode::OK, &issued, true)
        }
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}

/// `GET /console/applications/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: Ctx, id: web::Path<String>) -> HttpResponse {
    let Some(id) = path_id::<ApplicationId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let body = confirm(
        &format!("Delete application {id}? Its key stops working at once. Proxies that use it must be changed first."),
        &format!("/console/applications/{id}/delete"),
        "Delete application",
        &format!("/console/applications/{id}"),
        ctx.session.csrf.expose(),
    );
    ctx.ok(SECTION, "Delete application", body)
}

/// `POST /console/applications/{id}/delete`; a 409 (proxies use it) is explained.
pub(crate) async fn delete(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let ctx = posted.ctx;
    let Some(id) = path_id::<ApplicationId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let result = ctx.state.vault.delete_application(&ctx.principal, id).await;
    let audit = Audit::done(AuditAction::ApplicationDeleted, [*id.as_uuid()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(()) => see_other(&format!("/console/applications?deleted={id}")),
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}
