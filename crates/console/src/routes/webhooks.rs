//! `/console/webhooks`: the tenant's webhooks and where their delivery stands, and enabling one
//! the deliverer disabled (docs/webhooks.md). Created and changed otherwise through the API.

use actix_web::{web, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::AuditAction,
    error::Resource,
    webhook::{WebhookInput, WebhookStatus},
    PageRequest, VaultError, WebhookId,
};

use super::{path_id, query};
use crate::{
    audit::Audit,
    context::{Ctx, Posted},
    views::{see_other, webhooks, Section},
};

const SECTION: Section = Section::Webhooks;

/// `GET /console/webhooks` (`webhook:read`).
pub(crate) async fn list(ctx: Ctx, req: HttpRequest) -> HttpResponse {
    let q = query(&req);
    let number = |n: &str| q.opt(n).map(|v| v.parse::<i64>().unwrap_or(0));
    let page = match PageRequest::new(number("page"), number("size")) {
        Ok(p) => p,
        Err(e) => return ctx.failure(SECTION, &VaultError::Validation(e)),
    };
    let result = ctx.state.vault.list_webhooks(&ctx.principal, page).await;
    match ctx.unaudited(SECTION, result) {
        Ok(found) => {
            let enabled = q.opt("enabled").map(str::to_string);
            let body = webhooks::list(&found, ctx.session.csrf.expose(), enabled);
            ctx.ok(SECTION, "Webhooks", body)
        }
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}

/// `POST /console/webhooks/{id}/enable` (`webhook:update`): the webhook as it is, enabled.
pub(crate) async fn enable(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let ctx = posted.ctx;
    let Some(id) = path_id::<WebhookId>(&id) else {
        return ctx.failure(SECTION, &VaultError::NotFound(Resource::Webhook));
    };
    let vault = &ctx.state.vault;
    let result = match vault.get_webhook(&ctx.principal, id).await {
        Ok(current) => {
            let s = current.webhook.settings;
            let input = WebhookInput {
                name: s.name,
                url: s.url,
                notify_email: s.notify_email,
                events: s.events.iter().map(|e| e.as_str().to_string()).collect(),
                status: Some(WebhookStatus::Enabled),
            };
            vault
                .replace_webhook(&ctx.principal, id, input)
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    };
    let audit = Audit::done(AuditAction::WebhookUpdated, [*id.as_uuid()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(()) => see_other(&format!("/console/webhooks?enabled={id}")),
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}
