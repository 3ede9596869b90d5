//! The detokenize crate's tests, one binary: properties of parsing and substitution, and
//! time-budgeted fuzzing (`FUZZ_SECONDS`).

mod fuzz;
mod properties;
