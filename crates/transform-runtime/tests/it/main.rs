//! The transform runtime on its own, one test binary: the contract of SUPPLEMENT §7, the
//! globals, limits and abuse.

mod compile_check;
mod encoding;
mod process;
mod runtime;
