//! The management API's tests, one binary: every route on both backends, the OpenAPI
//! document, request fuzzing, readiness, rate limits and the `/proxy` mount.

mod actix_gateway;
mod application_keys;
mod applications;
mod audit;
mod authentication;
mod binding;
mod browsers;
mod caller;
mod children;
mod cursor_pages;
mod detokenize;
mod escalation;
mod fuzz_api;
mod header_prefix;
mod hostile_inputs;
mod idempotent_replays;
mod imports;
mod lifecycle;
mod openapi;
mod proxies;
mod proxy_patch;
mod query_params;
mod rate_limit;
mod readiness;
mod sdk_compat;
mod search_indexes;
mod service_basics;
mod storage_safety;
mod tenants;
mod token_ids;
mod token_oracles;
mod token_permissions;
mod tokens;
mod transforms;
mod type_errors;
