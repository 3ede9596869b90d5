//! `POST /console/proxies/{id}/try`: sends the test request through the gateway (see
//! [`crate::gateway_client`]) with the proxy's key, read with `proxy:read`, and the session's
//! API key; shows the proxy page with the answer.

use actix_web::{http::StatusCode, web, HttpResponse};
use tessera_domain::{error::Resource, ProxyId, VaultError};

use super::{
    path_id,
    proxies::{render, PageParts},
};
use crate::{
    context::Posted,
    gateway_client::{TryError, TryRequest},
    inputs::proxy::ProxyForm,
    views::{components::Problems, Section},
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
            Err(TryError::Form(problems)) => {
                status = StatusCode::BAD_REQUEST;
                try_problems = Problems::from_fields(&problems);
            }
            Err(e) => {
                tracing::warn!(request_id = %ctx.request_id, error = %e, "console Try it: no answer from the gateway");
                outcome = Some(Err(e));
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
