//! The transform runtime on its own, one test binary: the contract of SUPPLEMENT §7, the
//! globals, limits and abuse.

// As in the crate itself (see its lib.rs): the sandbox tests signal and inspect processes
// through libc.
#![allow(unsafe_code)]

mod compile_check;
mod encoding;
mod process;
mod runtime;
