//! # tessera-service
//!
//! What the management API (`tessera-http`, on actix) and the proxy gateway
//! (`tessera-gateway`, on hyper) share without depending on each other or on a framework:
//!
//! * [`problem`]: the RFC 7807 body every failure renders, and the one mapping of domain
//!   error classes to statuses and log levels;
//! * [`header_names`]: the prefixed header names of a deployment (`--header-prefix`);
//! * [`request_id`]: choosing or making the `X-Request-Id` of a request;
//! * [`rate_limit`]: per-credential token buckets;
//! * [`metrics`]: counters and histograms written by each thread into its own shard (no
//!   contended atomics on the hot path), summed when `/metrics` is scraped;
//! * [`proxy_error`]: the kinds of proxy failure with their statuses, metric labels and
//!   documentation, one table for the gateway and the API's OpenAPI document;
//! * [`build_info`]: the version and commit a process serves, for `/healthz` and `/metrics`;
//! * [`seconds`]: the bounds of the servers' flags that take a number of seconds;
//! * [`mount`]: the contract by which the management server mounts the gateway at `/proxy`
//!   while only the binary knows both.

pub mod build_info;
pub mod client_address;
pub mod header_names;
pub mod metrics;
pub mod mount;
pub mod problem;
pub mod proxy_error;
pub mod rate_limit;
pub mod request_id;
pub mod seconds;
pub mod unsafe_settings;

/// Default request body limit: 1 MiB (docs/api.md, "Errors").
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
