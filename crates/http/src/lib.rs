//! # tessera-http
//!
//! The management API on actix-web: authentication by `SVC-API-KEY`, RFC 7807 problem
//! responses for every failure, pagination, request ids and request logging. Handlers are thin:
//! they parse, call a [`tessera_domain::Vault`] use-case, and render a view.
//!
//! ```text
//!   request ─► request_id (id, log line, problem+json for any bare error)
//!           ─► route ─► extractors: Caller (SVC-API-KEY) ─► path ─► JsonBody / ListQuery
//!           ─► Vault use-case ─► view (JSON) or ApiError (problem+json)
//! ```

mod auth;
mod body;
pub mod gateway;
pub mod metrics;
pub mod openapi;
mod problem;
mod query;
pub mod rate_limit;
mod request_id;
mod routes;
mod state;
mod views;

use actix_web::{
    body::MessageBody,
    dev::{ServiceFactory, ServiceRequest, ServiceResponse},
    middleware::from_fn,
    web, App, Error,
};

pub use gateway::{Gateway, GatewayConfig};
pub use metrics::Metrics;
pub use problem::ApiError;
pub use request_id::RequestId;
pub use state::{ApiConfig, ApiState};

/// Default request body limit: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// Default bound on what detokenization may expand a proxied request to (10 MiB).
pub const DEFAULT_MAX_RENDERED_BYTES: u64 = 10 * 1024 * 1024;

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
    let gateway = state.gateway.clone();
    App::new()
        .app_data(web::Data::new(state))
        .wrap(from_fn(request_id::middleware))
        .configure(routes::configure)
        .configure(|cfg| {
            if let Some(gateway) = gateway {
                cfg.app_data(web::Data::new(gateway))
                    .configure(gateway::actix::configure);
            }
        })
        .default_service(web::to(routes::not_found))
}
