//! `/console/tokens`: search (the `POST /tokens/search` use-case) and creation.

use actix_web::{http::StatusCode, HttpRequest, HttpResponse};
use serde_json::{json, Map};
use tessera_domain::{
    audit::AuditAction, error::ErrorClass, search::TokenSearchRequest, Permission, TokenId,
    ValidationErrors,
};

use super::query;
use crate::{
    audit::{Audit, Refusal},
    context::{Ctx, Posted},
    inputs::{from_json, pairs, token::NewTokenForm},
    views::{
        components::Problems,
        see_other,
        tokens::{self, SearchForm},
        Section,
    },
};

impl SearchForm {
    fn read(req: &HttpRequest) -> (Self, Option<i64>, Option<i64>) {
        let q = query(req);
        let number = |name: &str| q.opt(name).map(|v| v.parse::<i64>().unwrap_or(0));
        let form = Self {
            id: q.get("id").trim().to_string(),
            types: q.all("type").into_iter().map(str::to_string).collect(),
            metadata: q.get("metadata").to_string(),
            fingerprint: q.get("fingerprint").trim().to_string(),
            container: q.get("container").trim().to_string(),
        };
        (form, number("page"), number("size"))
    }

    /// The body `POST /tokens/search` would receive.
    fn to_request(
        &self,
        page: Option<i64>,
        size: Option<i64>,
    ) -> Result<TokenSearchRequest, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let metadata = pairs(&self.metadata, "metadata", &mut errors);
        errors.into_result()?;
        let mut body = Map::new();
        if !metadata.is_empty() {
            body.insert("metadata".into(), json!(metadata));
        }
        if !self.types.is_empty() {
            body.insert("type".into(), json!(self.types));
        }
        if !self.fingerprint.is_empty() {
            body.insert("fingerprint".into(), json!(self.fingerprint));
        }
        if !self.container.is_empty() {
            body.insert("container".into(), json!(self.container));
        }
        body.insert("page".into(), json!(page));
        body.insert("size".into(), json!(size));
        from_json(serde_json::Value::Object(body))
    }
}

/// `GET /console/tokens`: the search form and a page of results (newest first). An id goes
/// straight to that token's page.
pub(crate) async fn search(ctx: Ctx, req: HttpRequest) -> HttpResponse {
    let (form, page, size) = SearchForm::read(&req);
    // Only a token id is said to be deleted: other text in the link is not echoed.
    let notice = query(&req)
        .opt("deleted")
        .filter(|id| id.parse::<TokenId>().is_ok())
        .map(str::to_string);
    if !form.id.is_empty() {
        return match form.id.parse::<TokenId>() {
            Ok(id) => see_other(&crate::links::token(&id)),
            Err(_) => {
                let problems = Problems::from_fields(&ValidationErrors::single(
                    "id",
                    format!("`{}` is not a valid token id", form.id),
                ));
                let body = tokens::search_page(&form, None, &problems, None);
                ctx.page(StatusCode::BAD_REQUEST, Section::Tokens, "Tokens", body)
            }
        };
    }
    let valid = match form
        .to_request(page, size)
        .and_then(TokenSearchRequest::validate)
    {
        Ok(v) => v,
        Err(e) => {
            let body = tokens::search_page(&form, None, &Problems::from_fields(&e), None);
            return ctx.page(StatusCode::BAD_REQUEST, Section::Tokens, "Tokens", body);
        }
    };
    let result = ctx
        .state
        .vault
        .search_tokens(&ctx.principal, &valid.search, valid.page)
        .await;
    let forbidden = matches!(&result, Err(e) if e.class() == ErrorClass::Forbidden);
    // Results show no data: only a refusal is recorded (as the API's `token.read` denial).
    let audit = Audit::attempt(AuditAction::TokenRead, [] as [TokenId; 0]);
    match ctx.audited(Section::Tokens, audit, result).await {
        Ok(found) => {
            let body = tokens::search_page(&form, Some(&found), &Problems::none(), notice);
            ctx.ok(Section::Tokens, "Tokens", body)
        }
        Err(Refusal::Page(page)) if !forbidden => *page,
        Err(Refusal::Page(_)) => ctx.page(
            StatusCode::FORBIDDEN,
            Section::Tokens,
            "Tokens",
            tokens::not_permitted_to_search(),
        ),
        Err(Refusal::Invalid(problems)) => {
            let body = tokens::search_page(&form, None, &problems, None);
            ctx.page(StatusCode::BAD_REQUEST, Section::Tokens, "Tokens", body)
        }
    }
}

/// `GET /console/tokens/new`.
pub(crate) async fn new_form(ctx: Ctx) -> HttpResponse {
    let body = tokens::new_form(
        ctx.session.csrf.expose(),
        &NewTokenForm::default(),
        &Problems::none(),
    );
    ctx.ok(Section::Tokens, "New token", body)
}

/// `POST /console/tokens/new`: creates the token, then shows its page.
pub(crate) async fn create(posted: Posted) -> HttpResponse {
    let Posted { ctx, form } = posted;
    let form = NewTokenForm::read(&form);
    let shown_again = |problems: &Problems| {
        let body = tokens::new_form(ctx.session.csrf.expose(), &form, problems);
        ctx.page(StatusCode::BAD_REQUEST, Section::Tokens, "New token", body)
    };
    let input = match form.to_input() {
        Ok(input) => input,
        Err(e) => return shown_again(&Problems::from_fields(&e)),
    };
    let result = ctx.state.vault.create_token(&ctx.principal, input).await;
    let ids: Vec<_> = result.iter().map(|t| t.id.clone()).collect();
    match ctx
        .audited(
            Section::Tokens,
            Audit::done(AuditAction::TokenCreated, ids),
            result,
        )
        .await
    {
        // A key that may not read the token cannot open its page: say what was made here.
        Ok(token)
            if !ctx
                .principal
                .may_on(Permission::TokenRead, &token.container) =>
        {
            ctx.page(
                StatusCode::CREATED,
                Section::Tokens,
                "Token created",
                tokens::created_unreadable(&token.id.to_string(), token.container.as_str()),
            )
        }
        Ok(token) => see_other(&format!("{}?created=1", crate::links::token(&token.id))),
        Err(Refusal::Invalid(problems)) => shown_again(&problems),
        Err(Refusal::Page(page)) => *page,
    }
}
