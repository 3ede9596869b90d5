//! The transform runtime on its own, one test binary: the contract of docs/api.md, "Transforms", the
//! globals, limits and abuse.

// As in the crate itself (see its lib.rs): the sandbox tests signal and inspect processes
// through libc.
#![allow(unsafe_code)]

/// Defines `mod inline { #[tokio::test] fn name }` and `mod process { … }` for each test
/// function taking an engine config (the module's own `config(isolation)`).
macro_rules! both_modes {
    ($($name:ident),* $(,)?) => {
        mod inline {
            $(#[tokio::test] async fn $name() { super::$name(super::config(super::Isolation::Inline)).await; })*
        }
        mod process {
            $(#[tokio::test] async fn $name() { super::$name(super::config(super::Isolation::Process)).await; })*
        }
    };
}

mod compile_check;
mod encoding;
mod process;
mod runtime;
mod taint;
