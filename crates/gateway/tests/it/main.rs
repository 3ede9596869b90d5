//! The gateway's tests, one binary: a real gateway on a socket in front of an echo upstream,
//! on both storage backends; one module per stage, one behaviour per test.

mod audit;
mod authenticate;
mod batched_reads;
mod binding;
mod body;
mod bound_reads;
mod caching;
mod destination;
mod detokenize;
mod forward;
mod header_prefix;
mod headers;
mod metrics;
mod rate_limit;
mod routes;
mod runaway;
mod select;
mod transform;
