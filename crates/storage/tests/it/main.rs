//! The storage crate's tests, one binary: every store trait on both backends, master-key
//! the point-read path, rotation, sealing of legacy proxy secrets, and the embedding example.

mod application_keys_legacy;
mod application_sessions;
mod audit;
mod audit_legacy;
mod console_use_cases;
mod cursor_walk;
mod custody_outage;
mod cvc_retention;
mod data_key_rotation;
mod embed_example;
mod lifecycle;
mod postgres_tls;
mod read_batch;
mod read_path;
mod rotation;
mod schema;
mod sealed_proxies;
mod search_limits;
mod store_suite;
mod tenant_deletion;
mod vaults;
