//! `/console/tokens/{id}`: the token's page (masked), Reveal, editing metadata and expiry,
//! deletion.

use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::AuditAction, store::TokenFilter, DataTransform, PageRequest, Permission, Token, TokenId,
};

use super::{path_id, query};
use crate::{
    audit::{Audit, Refusal},
    context::{Ctx, Posted},
    inputs::token::EditTokenForm,
    views::{
        components::{confirm, Problems},
        see_other,
        token::{self, Links, Shown},
        Section,
    },
};

const SECTION: Section = Section::Tokens;

/// A page of links (parents or children) from the query parameter `name`.
fn links_page(req: &HttpRequest, name: &str) -> PageRequest {
    let n = query(req)
        .opt(name)
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(1);
    PageRequest::new(Some(n), None).unwrap_or_default()
}

/// The token, as an attempt at `token.read` (a refusal is recorded). `Err`: the page to show.
async fn read(ctx: &Ctx, raw: &str, audit_success: bool) -> Result<Token, HttpResponse> {
    let Some(id) = path_id::<TokenId>(raw) else {
        return Err(ctx.failure(
            SECTION,
            &tessera_domain::VaultError::NotFound(tessera_domain::error::Resource::Token),
        ));
    };
    let result = ctx.state.vault.get_token(&ctx.principal, id.clone()).await;
    let audit = if audit_success {
        Audit::done(AuditAction::TokenRead, [id])
    } else {
        Audit::attempt(AuditAction::TokenRead, [id])
    };
    ctx.audited(SECTION, audit, result)
        .await
        .map_err(|r| r.into_response(ctx, SECTION))
}

/// Parents and children, listed without their data (so recording no `token.read`).
async fn links(ctx: &Ctx, req: &HttpRequest, id: &TokenId) -> Links {
    let vault = &ctx.state.vault;
    let parents = vault
        .list_parents(&ctx.principal, id.clone(), links_page(req, "parents_page"))
        .await;
    let children = vault
        .list_children(
            &ctx.principal,
            id.clone(),
            &TokenFilter::default(),
            links_page(req, "children_page"),
        )
        .await;
    Links {
        parents: parents.map_err(|e| e.public_message()),
        children: children.map_err(|e| e.public_message()),
    }
}

async fn token_page(ctx: &Ctx, req: &HttpRequest, t: Token, shown: Shown) -> HttpResponse {
    let links = links(ctx, req, &t.id).await;
    let created = query(req).checked("created");
    let title = format!("Token {}", t.id);
    let names = ctx.names([t.created_by, t.modified_by]).await;
    let body = token::page(
        ctx.session.csrf.expose(),
        &t,
        shown,
        &links,
        &names,
        created,
    );
    ctx.ok(SECTION, &title, body)
}

/// What the page shows of `t` to the signed-in application: the plaintext only after Reveal
/// and only where it may read it (`token:read` under a `reveal` transform), nothing under
/// `redact`, otherwise the console's mask.
fn shown_to(ctx: &Ctx, t: &Token, reveal: bool) -> Shown {
    let may_reveal = ctx.principal.may_reveal(&t.container);
    match ctx
        .principal
        .transform_on(Permission::TokenRead, &t.container)
    {
        _ if reveal && may_reveal => Shown::Revealed,
        DataTransform::Redact => Shown::Withheld,
        _ => Shown::Masked { may_reveal },
    }
}

/// `GET /console/tokens/{id}`: the token with its data masked.
pub(crate) async fn page(ctx: Ctx, req: HttpRequest, id: web::Path<String>) -> HttpResponse {
    match read(&ctx, &id, false).await {
        Ok(t) => {
            let shown = shown_to(&ctx, &t, false);
            token_page(&ctx, &req, t, shown).await
        }
        Err(page) => page,
    }
}

/// `POST /console/tokens/{id}/reveal`: the token with its data, recorded as `token.read`.
pub(crate) async fn reveal(
    posted: Posted,
    req: HttpRequest,
    id: web::Path<String>,
) -> HttpResponse {
    match read(&posted.ctx, &id, true).await {
        Ok(t) => {
            let shown = shown_to(&posted.ctx, &t, true);
            token_page(&posted.ctx, &req, t, shown).await
        }
        Err(page) => page,
    }
}

/// `GET /console/tokens/{id}/edit`.
pub(crate) async fn edit_form(ctx: Ctx, id: web::Path<String>) -> HttpResponse {
    match read(&ctx, &id, false).await {
        Ok(t) => {
            let form = EditTokenForm::of(&t);
            let body = token::edit_form(ctx.session.csrf.expose(), &t.id, &form, &Problems::none());
            ctx.ok(SECTION, "Edit token", body)
        }
        Err(page) => page,
    }
}

/// `POST /console/tokens/{id}/edit`: the merge patch of what changed (`token:update`).
pub(crate) async fn update(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let Posted { ctx, form } = posted;
    let Some(token_id) = path_id::<TokenId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let form = EditTokenForm::read(&form);
    let shown_again = |problems: &Problems| {
        let body = token::edit_form(ctx.session.csrf.expose(), &token_id, &form, problems);
        ctx.page(StatusCode::BAD_REQUEST, SECTION, "Edit token", body)
    };
    let patch = match form.to_patch() {
        Ok(p) => p,
        Err(e) => return shown_again(&Problems::from_fields(&e)),
    };
    let result = ctx
        .state
        .vault
        .update_token(&ctx.principal, token_id.clone(), patch)
        .await;
    let audit = Audit::done(AuditAction::TokenUpdated, [token_id.clone()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(_) => see_other(&crate::links::token(&token_id)),
        Err(Refusal::Invalid(problems)) => shown_again(&problems),
        Err(Refusal::Page(page)) => *page,
    }
}

fn not_found() -> tessera_domain::VaultError {
    tessera_domain::VaultError::NotFound(tessera_domain::error::Resource::Token)
}

/// `GET /console/tokens/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: Ctx, id: web::Path<String>) -> HttpResponse {
    let Some(token_id) = path_id::<TokenId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let body = confirm(
        &format!("Delete token {token_id}? Its data cannot be recovered. Its links to parents and children go with it; the linked tokens remain."),
        &crate::links::token_action(&token_id, "delete"),
        "Delete token",
        &crate::links::token(&token_id),
        ctx.session.csrf.expose(),
    );
    ctx.ok(SECTION, "Delete token", body)
}

/// `POST /console/tokens/{id}/delete`.
pub(crate) async fn delete(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let ctx = posted.ctx;
    let Some(token_id) = path_id::<TokenId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let result = ctx
        .state
        .vault
        .delete_token(&ctx.principal, token_id.clone())
        .await;
    let audit = Audit::done(AuditAction::TokenDeleted, [token_id.clone()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(()) => see_other(&crate::links::token_deleted(&token_id)),
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}
