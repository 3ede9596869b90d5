//! `POST /console/proxies/{id}/try`: sends the test request through the gateway (see
//! [`crate::gateway_client`]) with the proxy's key, read with `proxy:read`, and the session's
//! API key; shows the proxy page with the answer.

use actix_web::{http::StatusCode, web, HttpResponse};
use tessera_domain::{
    error::Resource, store::TokenSearch, PageRequest, Permission, ProxyId, VaultError,
};

use super::{
    path_id,
    proxies::{render, PageParts},
};
use crate::{
    context::{Ctx, Posted},
    gateway_client::TryRequest,
    inputs::proxy::ProxyForm,
    mask,
    views::{
        components::Problems,
        proxies::{RecentToken, RecentTokens},
        Section,
    },
};

/// The handler.
pub(crate) async fn send(posted: Posted, id: web::Path<String>) -> HttpResponse {
    let Posted { ctx, form } = posted;
    let Some(id) = path_id::<ProxyId>(&id) else {
        return ctx.failure(Section::Proxies, &VaultError::NotFound(Resource::Proxy));
    };
    let proxy = match ctx.state.vault.get_proxy(&ctx.principal, id).await {
        Ok(p) => p,
        Err(e) => return ctx.failure(Section::Proxies, &e),
    };
    let request = TryRequest::read(&form);
    let (mut try_problems, mut outcome) = (Problems::none(), None);
    let mut status = StatusCode::OK;
    if let Some(gateway) = &ctx.state.gateway {
        match gateway
            .send(&request, &proxy.key, &ctx.session.api_key)
            .await
        {
            Ok(res) => outcome = Some(Ok(res)),
            Err(Ok(problems)) => {
                status = StatusCode::BAD_REQUEST;
                try_problems = Problems::from_fields(&problems);
            }
            Err(Err(message)) => {
                tracing::warn!(request_id = %ctx.request_id, error = %message, "console Try it: no answer from the gateway");
                outcome = Some(Err(message));
            }
        }
    }
    let parts = PageParts {
        try_problems: &try_problems,
        try_outcome: outcome.as_ref(),
        ..PageParts::of(&proxy, &request)
    };
    render(&ctx, status, &id, &ProxyForm::of(&proxy), parts).await
}

/// How many tokens Try it offers to insert.
const RECENT: i64 = 10;

/// The tokens Try it offers: the newest the signed-in application may read, found as the
/// token list finds them (`Vault::search_tokens`, which neither returns nor counts tokens it
/// may not read), each reduced to its id, type and mask ([`crate::mask::summary`]) here, so
/// no data reaches the page. Like the list, it records no event when it succeeds; a key
/// without `token:read` is not asked.
pub(crate) async fn recent_tokens(ctx: &Ctx) -> RecentTokens {
    if !ctx.principal.may_somewhere(Permission::TokenRead) {
        return RecentTokens::NotPermitted;
    }
    let Ok(page) = PageRequest::new(Some(1), Some(RECENT)) else {
        return RecentTokens::Listed(vec![]);
    };
    let found = ctx
        .state
        .vault
        .search_tokens(&ctx.principal, &TokenSearch::default(), page)
        .await;
    match found {
        Ok(found) => RecentTokens::Listed(
            found
                .items
                .iter()
                .map(|t| RecentToken {
                    id: t.id,
                    token_type: t.token_type,
                    mask: mask::summary(t.token_type, t.data.expose()),
                })
                .collect(),
        ),
        Err(e) => RecentTokens::Failed(e.public_message()),
    }
}
