//! The management API's tests, one binary: every route on both backends, the OpenAPI
//! document, request fuzzing, readiness, rate limits and the `/proxy` mount.

mod actix_gateway;
mod api;
mod audit;
mod binding;
mod caller;
mod children;
mod escalation;
mod fuzz_api;
mod hostile_inputs;
mod idempotent_replays;
mod lifecycle;
mod openapi;
mod proxies;
mod rate_limit;
mod readiness;
mod token_oracles;
