//! The console's route table, and what several routes share.

mod applications;
mod audit;
mod proxies;
mod sign_in;
mod token;
mod tokens;
mod try_it;
mod webhooks;

use crate::{form::Form, views::see_other};
use actix_web::{
    dev::{ServiceFactory, ServiceRequest},
    web, Error, HttpRequest, Scope,
};

/// Registers every console route on `scope` (mounted at `/console`). Fixed paths come before
/// `{id}` paths: actix matches in registration order.
pub(crate) fn scope<T>(scope: Scope<T>) -> Scope<T>
where
    T: ServiceFactory<ServiceRequest, Config = (), Error = Error, InitError = ()>,
{
    use web::{get, post, resource};
    scope
        .service(resource("").route(get().to(sign_in::page)))
        .service(resource("/").route(get().to(|| async { see_other("/console") })))
        .service(resource("/sign-in").route(post().to(sign_in::sign_in)))
        .service(resource("/sign-out").route(post().to(sign_in::sign_out)))
        .service(resource("/assets/{name}").route(get().to(crate::assets::serve)))
        .service(resource("/tokens").route(get().to(tokens::search)))
        .service(
            resource("/tokens/new")
                .route(get().to(tokens::new_form))
                .route(post().to(tokens::create)),
        )
        .service(resource("/tokens/{id}").route(get().to(token::page)))
        .service(resource("/tokens/{id}/reveal").route(post().to(token::reveal)))
        .service(
            resource("/tokens/{id}/edit")
                .route(get().to(token::edit_form))
                .route(post().to(token::update)),
        )
        .service(
            resource("/tokens/{id}/delete")
                .route(get().to(token::confirm_delete))
                .route(post().to(token::delete)),
        )
        .service(resource("/proxies").route(get().to(proxies::list)))
        .service(
            resource("/proxies/new")
                .route(get().to(proxies::new_form))
                .route(post().to(proxies::create)),
        )
        .service(
            resource("/proxies/{id}")
                .route(get().to(proxies::page))
                .route(post().to(proxies::update)),
        )
        .service(resource("/proxies/{id}/try").route(post().to(try_it::send)))
        .service(resource("/proxies/{id}/key").route(post().to(proxies::show_key)))
        .service(
            resource("/proxies/{id}/delete")
                .route(get().to(proxies::confirm_delete))
                .route(post().to(proxies::delete)),
        )
        .service(resource("/applications").route(get().to(applications::list)))
        .service(
            resource("/applications/new")
                .route(get().to(applications::new_form))
                .route(post().to(applications::create)),
        )
        .service(
            resource("/applications/{id}")
                .route(get().to(applications::page))
                .route(post().to(applications::update)),
        )
        .service(
            resource("/applications/{id}/regenerate")
                .route(get().to(applications::confirm_regenerate))
                .route(post().to(applications::regenerate)),
        )
        .service(
            resource("/applications/{id}/delete")
                .route(get().to(applications::confirm_delete))
                .route(post().to(applications::delete)),
        )
        .service(resource("/webhooks").route(get().to(webhooks::list)))
        .service(resource("/webhooks/{id}/enable").route(post().to(webhooks::enable)))
        .service(resource("/audit").route(get().to(audit::list)))
        .service(resource("/audit/verify").route(post().to(audit::verify)))
        .default_service(web::to(not_found))
}

/// `GET`/`HEAD /` on the console's listener: to the console (303). The target is fixed, so
/// nothing in the request can choose where the browser goes.
pub(crate) async fn to_console() -> actix_web::HttpResponse {
    see_other(crate::mount::MOUNT)
}

/// Any other path under `/console`.
async fn not_found() -> actix_web::HttpResponse {
    crate::views::errors::status_page(actix_web::http::StatusCode::NOT_FOUND)
}

/// The path's id: `None` (shown as "Not found") when it is not a UUID.
pub(crate) fn path_id<T: std::str::FromStr>(raw: &str) -> Option<T> {
    raw.parse().ok()
}

/// The request's query string as pairs.
pub(crate) fn query(req: &HttpRequest) -> Form {
    Form::parse(req.query_string().as_bytes())
}
