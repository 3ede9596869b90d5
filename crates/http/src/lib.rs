//! # tessera-http
//!
//! The management API on actix-web: authentication by `SVC-API-KEY`, RFC 7807 problem
//! responses for every failure, pagination, request ids and request logging. Handlers are thin:
//! they parse, call a [`tessera_domain::Vault`] use-case, and render a view.
//!
//! ```text
//!   request ─► request_id (id, log line, problem+json for any bare error)
//!           ─► trailing_slash (`/tokens/` is `/tokens`; not under `/proxy`)
//!           ─► route ─► extractors: Caller (SVC-API-KEY) ─► path ─► JsonBody / ListQuery
//!           ─► Vault use-case ─► view (JSON) or ApiError (problem+json)
//! ```

mod audit;
mod auth;
mod body;
pub mod browser;
mod idempotency;
mod json_shapes;
pub mod openapi;
mod paths;
mod problem;
mod proxy_mount;
mod query;
mod request_id;
mod routes;
mod state;
mod strict_json;
mod trailing_slash;
mod views;
mod webhook_view;

use actix_web::{
    body::MessageBody,
    dev::{ServiceFactory, ServiceRequest, ServiceResponse},
    middleware::from_fn,
    web, App, Error,
};

pub use problem::ApiError;
pub use proxy_mount::ProxyErrorBody;
pub use request_id::RequestId;
pub use state::{ApiConfig, ApiState, ProcessMetrics};
pub use tessera_service::DEFAULT_MAX_BODY_BYTES;

/// The management API as an actix [`App`], ready for `HttpServer::new` or `test::init_service`.
pub fn app(
    state: ApiState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = Error,
        InitError = (),
    >,
> {
    let proxy = state.proxy.clone();
    let names = state.config.names.clone();
    App::new()
        .app_data(web::Data::new(state))
        // Outermost last: the request id and its log line, then the trailing slash.
        .wrap(from_fn(trailing_slash::trim))
        .wrap(from_fn(request_id::middleware))
        .configure(move |cfg| routes::configure(cfg, &names))
        .configure(openapi::configure)
        .configure(|cfg| {
            if let Some(proxy) = proxy {
                cfg.app_data(web::Data::new(proxy))
                    .configure(proxy_mount::configure);
            }
        })
        .default_service(web::to(routes::not_found))
}
