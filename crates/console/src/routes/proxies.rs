//! `/console/proxies`: list and search, create (the key shown once), edit, delete. Create and
//! save go the management API's way: the permission, then the transforms' compile check, then
//! the use-case.

use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
use tessera_domain::{
    audit::AuditAction, error::Resource, proxy::name_like_pattern, store::ProxyFilter,
    ApplicationType, PageRequest, Permission, Proxy, ProxyId, ProxyInput, VaultError,
};

use super::{path_id, query};
use crate::{
    audit::{Audit, Refusal},
    context::{Ctx, Posted},
    gateway_client::TryRequest,
    inputs::proxy::ProxyForm,
    names::Names,
    views::{
        components::{confirm, stamps, Problems, Stamps},
        proxies::{self, AppChoices, RecentTokens},
        see_other, Section,
    },
};

const SECTION: Section = Section::Proxies;

fn not_found() -> VaultError {
    VaultError::NotFound(Resource::Proxy)
}

/// `GET /console/proxies`: the list, narrowed by name.
pub(crate) async fn list(ctx: Ctx, req: HttpRequest) -> HttpResponse {
    let q = query(&req);
    let name = q.get("name").trim().to_string();
    let number = |n: &str| q.opt(n).map(|v| v.parse::<i64>().unwrap_or(0));
    let page = match PageRequest::new(number("page"), number("size")) {
        Ok(p) => p,
        Err(e) => return ctx.failure(SECTION, &VaultError::Validation(e)),
    };
    let mut filter = ProxyFilter::default();
    if !name.is_empty() {
        filter.name_like = Some(name_like_pattern(&name));
    }
    let result = ctx
        .state
        .vault
        .list_proxies(&ctx.principal, &filter, page)
        .await;
    match ctx.unaudited(SECTION, result) {
        Ok(found) => {
            let deleted = q.opt("deleted").map(str::to_string);
            ctx.ok(SECTION, "Proxies", proxies::list(&name, &found, deleted))
        }
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}

/// The public and private applications a proxy may use, when the signed-in application may
/// list applications (the first 100).
pub(crate) async fn app_choices(ctx: &Ctx) -> AppChoices {
    if !ctx.principal.may_somewhere(Permission::ApplicationRead) {
        return None;
    }
    let page = PageRequest::new(Some(1), Some(100)).ok()?;
    let apps = ctx
        .state
        .vault
        .list_applications(&ctx.principal, page)
        .await
        .ok()?;
    Some(
        apps.items
            .into_iter()
            .filter(|a| a.app_type != ApplicationType::Management)
            .map(|a| {
                (
                    a.id.to_string(),
                    format!("{} ({})", a.name, a.app_type.as_str()),
                )
            })
            .collect(),
    )
}

/// `GET /console/proxies/new`.
pub(crate) async fn new_form(ctx: Ctx) -> HttpResponse {
    let apps = app_choices(&ctx).await;
    let body = proxies::form(
        ctx.session.csrf.expose(),
        None,
        &ProxyForm::blank(),
        &apps,
        &Problems::none(),
    );
    ctx.ok(SECTION, "New proxy", body)
}

/// The API's use-cases, which check the permission (403 first), then compile the transforms,
/// then validate.
async fn save(ctx: &Ctx, id: Option<ProxyId>, input: ProxyInput) -> Result<Proxy, VaultError> {
    let vault = &ctx.state.vault;
    match id {
        None => vault.create_proxy(&ctx.principal, input).await,
        Some(id) => vault.update_proxy(&ctx.principal, id, input).await,
    }
}

/// `POST /console/proxies/new`: creates the proxy and shows its key once.
pub(crate) async fn create(posted: Posted) -> HttpResponse {
    let Posted { ctx, form } = posted;
    let form = ProxyForm::read(&form);
    let result = match form.to_input() {
        Ok(input) => save(&ctx, None, input).await,
        Err(e) => Err(VaultError::Validation(e)),
    };
    let ids: Vec<_> = result.iter().map(|p| *p.id.as_uuid()).collect();
    let audit = Audit::done(AuditAction::ProxyCreated, ids);
    match ctx.audited(SECTION, audit, result).await {
        Ok(proxy) => {
            let body = proxies::created(&proxy.id, &proxy.name, proxy.key.expose());
            ctx.page(StatusCode::CREATED, SECTION, "Proxy created", body)
        }
        Err(Refusal::Invalid(problems)) => {
            let apps = app_choices(&ctx).await;
            let body = proxies::form(ctx.session.csrf.expose(), None, &form, &apps, &problems);
            ctx.page(StatusCode::BAD_REQUEST, SECTION, "New proxy", body)
        }
        Err(Refusal::Page(page)) => *page,
    }
}

/// What the proxy page shows besides the form.
pub(crate) struct PageParts<'a> {
    pub(crate) problems: &'a Problems,
    pub(crate) try_request: &'a TryRequest,
    pub(crate) try_problems: &'a Problems,
    pub(crate) try_outcome:
        Option<&'a Result<crate::gateway_client::TryResponse, crate::gateway_client::TryError>>,
    pub(crate) saved: bool,
    /// When the proxy was created and modified, and by whom (when it was read).
    pub(crate) stamps: Option<Stamps>,
    /// Its key, after Show key.
    pub(crate) key: Option<&'a str>,
}

impl<'a> PageParts<'a> {
    /// The page of `proxy` as read, with `try_request` in Try it and no problem.
    pub(crate) fn of(proxy: &Proxy, try_request: &'a TryRequest) -> Self {
        Self {
            problems: &NO_PROBLEMS,
            try_request,
            try_problems: &NO_PROBLEMS,
            try_outcome: None,
            saved: false,
            stamps: Some(stamps_of(proxy)),
            key: None,
        }
    }
}

static NO_PROBLEMS: Problems = Problems {
    detail: None,
    fields: std::collections::BTreeMap::new(),
};

/// When `proxy` was created and modified, and by whom.
fn stamps_of(proxy: &Proxy) -> Stamps {
    Stamps {
        created_at: proxy.created_at,
        created_by: proxy.created_by,
        modified_at: proxy.modified_at,
        modified_by: proxy.modified_by,
    }
}

/// The proxy page: who made it, the form ("Save"), its key, "Try it" (with the tokens to
/// insert), and the way to delete.
pub(crate) async fn render(
    ctx: &Ctx,
    status: StatusCode,
    id: &ProxyId,
    form: &ProxyForm,
    parts: PageParts<'_>,
) -> HttpResponse {
    let apps = app_choices(ctx).await;
    let names = match &parts.stamps {
        Some(s) => ctx.names(s.ids()).await,
        None => Names::none(),
    };
    let available = ctx.state.gateway.is_some();
    let recent = match available {
        true => crate::recent_tokens::recent_tokens(ctx).await,
        false => RecentTokens::Listed(vec![]),
    };
    let token = ctx.session.csrf.expose();
    let body = maud::html! {
        @if parts.saved { p.notice role="status" { "Saved." } }
        @if let Some(s) = &parts.stamps { (stamps(s, &names)) }
        p.toolbar { a.button.danger href={ "/console/proxies/" (id) "/delete" } { "Delete proxy" } }
        (proxies::form(token, Some(id), form, &apps, parts.problems))
        (proxies::key_section(token, id, parts.key))
        (proxies::try_it(token, id, available, parts.try_request, &recent, parts.try_problems, parts.try_outcome))
    };
    let title = format!("Proxy {}", form.name);
    ctx.page(status, SECTION, &title, body)
}

/// `GET /console/proxies/{id}`.
pub(crate) async fn page(ctx: Ctx, req: HttpRequest, id: web::Path<String>) -> HttpResponse {
    shown(&ctx, &id, query(&req).checked("saved"), false).await
}

/// `POST /console/proxies/{id}/key`: the proxy page with its key shown. It needs what the
/// API's `GET /proxies/{id}` needs (`proxy:read`), which returns the key too; like that read,
/// it records no event.
pub(crate) async fn show_key(posted: Posted, id: web::Path<String>) -> HttpResponse {
    shown(&posted.ctx, &id, false, true).await
}

/// The page of proxy `id`, read with `proxy:read` (no event, as the API's read): after a save
/// it says so, and with `show_key` it shows the key.
async fn shown(ctx: &Ctx, id: &str, saved: bool, show_key: bool) -> HttpResponse {
    let Some(id) = path_id::<ProxyId>(id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let result = ctx.state.vault.get_proxy(&ctx.principal, id).await;
    match ctx.unaudited(SECTION, result) {
        Ok(proxy) => {
            let example = TryRequest::example();
            let parts = PageParts {
                saved,
                key: show_key.then(|| proxy.key.expose().as_str()),
                ..PageParts::of(&proxy, &example)
            };
            render(ctx, StatusCode::OK, &id, &ProxyForm::of(&proxy), parts).await
        }
        Err(refusal) => refusal.into_response(ctx, SECTION),
    }
}

/// `POST /console/proxies/{id}`: saves the form.
pub(crate) async fn update(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let Posted { ctx, form } = posted;
    let Some(id) = path_id::<ProxyId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let form = ProxyForm::read(&form);
    let result = match form.to_input() {
        Ok(input) => save(&ctx, Some(id), input).await,
        Err(e) => Err(VaultError::Validation(e)),
    };
    let audit = Audit::done(AuditAction::ProxyUpdated, [*id.as_uuid()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(_) => see_other(&format!("/console/proxies/{id}?saved=1")),
        Err(Refusal::Invalid(problems)) => {
            let example = TryRequest::example();
            let parts = PageParts {
                problems: &problems,
                try_request: &example,
                try_problems: &NO_PROBLEMS,
                try_outcome: None,
                saved: false,
                stamps: None,
                key: None,
            };
            render(&ctx, StatusCode::BAD_REQUEST, &id, &form, parts).await
        }
        Err(Refusal::Page(page)) => *page,
    }
}

/// `GET /console/proxies/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: Ctx, id: web::Path<String>) -> HttpResponse {
    let Some(id) = path_id::<ProxyId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let body = confirm(
        &format!("Delete proxy {id}? Its key stops working at once."),
        &format!("/console/proxies/{id}/delete"),
        "Delete proxy",
        &format!("/console/proxies/{id}"),
        ctx.session.csrf.expose(),
    );
    ctx.ok(SECTION, "Delete proxy", body)
}

/// `POST /console/proxies/{id}/delete`.
pub(crate) async fn delete(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let ctx = posted.ctx;
    let Some(id) = path_id::<ProxyId>(&id) else {
        return ctx.failure(SECTION, &not_found());
    };
    let result = ctx.state.vault.delete_proxy(&ctx.principal, id).await;
    let audit = Audit::done(AuditAction::ProxyDeleted, [*id.as_uuid()]);
    match ctx.audited(SECTION, audit, result).await {
        Ok(()) => see_other(&format!("/console/proxies?deleted={id}")),
        Err(refusal) => refusal.into_response(&ctx, SECTION),
    }
}
