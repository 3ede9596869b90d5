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

use serde_json::Value;
use tessera_transform_runtime::{Args, Body, EngineConfig, Input, Isolation, SandboxCommand};

/// The default engine config in `isolation`, its sandbox processes started from this crate's
/// `tessera-transform-sandbox` binary.
fn sandboxed(isolation: Isolation) -> EngineConfig {
    EngineConfig {
        isolation,
        sandbox: Some(SandboxCommand {
            program: env!("CARGO_BIN_EXE_tessera-transform-sandbox").into(),
            args: Vec::new(),
        }),
        ..EngineConfig::default()
    }
}

/// An input whose JSON body is `body` and whose configuration is `configuration`.
fn json_input(body: Value, configuration: &[(&str, &str)]) -> Input {
    Input {
        args: Args {
            body: Body::Json(body.to_string()),
            headers: vec![("content-type".into(), "application/json".into())],
            method: None,
            path: None,
            query: None,
            status: None,
        },
        configuration: configuration
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}
