//! The domain crate's black-box tests, one binary.

mod audit_writer;
mod fuzz_container;
mod proxy_keys;
