//! The audit flags of serving processes, and starting the audit writer they configure.

use std::{fs::OpenOptions, io::Write, path::PathBuf, sync::Arc};

use clap::{Args, ValueEnum};
use tessera_audit::AuditStore;
use tessera_domain::{audit::Durability, Vault};

use crate::error::StartupError;

/// When a request's audit events are committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuditMode {
    /// Before the request is answered (grouped with concurrent requests' events).
    Sync,
    /// Within about a second after; flushed on graceful shutdown; a crash loses at most what
    /// was still queued.
    Async,
    /// Not recorded at all (measurements only: a vault under PCI DSS needs a trail).
    Off,
}

/// Audit-trail flags of `api serve` and `proxy-gateway`.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// When audit events are committed: `sync` (before the response), `async` (within 1 s),
    /// or `off`.
    #[arg(long, env = "TESSERA_AUDIT_DURABILITY", value_enum, default_value_t = AuditMode::Sync)]
    pub audit_durability: AuditMode,
    /// Also write every committed audit event as one JSON line to this file (appended,
    /// created with mode 0600), or to standard output with `-` (for a SIEM).
    #[arg(long, env = "TESSERA_AUDIT_STREAM")]
    pub audit_stream: Option<String>,
    /// Days an audit event is kept; the sweeper removes older ones. `0` keeps them forever.
    #[arg(long, env = "TESSERA_AUDIT_RETENTION_DAYS", default_value_t = 365)]
    pub audit_retention_days: u32,
}

impl Default for AuditArgs {
    fn default() -> Self {
        Self {
            audit_durability: AuditMode::Sync,
            audit_stream: None,
            audit_retention_days: 365,
        }
    }
}

/// Turns the trail on for `vault` as `args` say, kept in `store`, and starts its writer on a
/// thread of its own. Call [`tessera_domain::audit::AuditLog::flush`] (through
/// `vault.audit()`) before exiting.
///
/// # Errors
/// When the stream file cannot be opened.
pub fn start_audit(
    vault: Vault,
    store: Arc<dyn AuditStore>,
    args: &AuditArgs,
) -> Result<Vault, StartupError> {
    let vault = if args.audit_retention_days == 0 {
        vault
    } else {
        vault.with_audit_retention(time::Duration::days(i64::from(args.audit_retention_days)))
    };
    let durability = match args.audit_durability {
        AuditMode::Sync => Durability::Sync,
        AuditMode::Async => Durability::Async,
        AuditMode::Off => {
            tracing::warn!("--audit-durability off: no audit trail is recorded");
            return Ok(vault);
        }
    };
    let stream: Option<Box<dyn Write + Send>> = match args.audit_stream.as_deref() {
        None => None,
        Some("-") => Some(Box::new(std::io::stdout())),
        Some(path) => Some(Box::new(open_stream(&PathBuf::from(path))?)),
    };
    let (log, writer) = tessera_audit::start(store, durability, stream);
    let vault = vault.with_audit(log);
    writer
        .spawn()
        .map_err(|e| StartupError::AuditWriter(e.to_string()))?;
    Ok(vault)
}

fn open_stream(path: &PathBuf) -> Result<std::fs::File, StartupError> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(|e| StartupError::AuditStream {
        path: path.display().to_string(),
        source: e,
    })
}
