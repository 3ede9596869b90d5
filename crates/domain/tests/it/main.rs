//! The domain crate's black-box tests, one binary.

mod fuzz_container;
mod proxy_keys;
