//! Logging set-up: human-readable by default, JSON lines with `--log-format json`; level from
//! `RUST_LOG` (default `info`). Logs go to stderr so stdout carries only command output.

use tracing_subscriber::EnvFilter;

use crate::LogFormat;

/// Installs the global subscriber (once).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
