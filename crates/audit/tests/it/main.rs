//! The audit crate's black-box tests, one binary.

mod audit_writer;
