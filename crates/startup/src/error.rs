//! Why the process could not start.

use tessera_domain::VaultError;

/// Why the process could not start. Each message names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// `--database-url` does not parse.
    #[error("--database-url: {0}")]
    DatabaseUrl(String),
    /// The master key is missing, malformed or unreadable.
    #[error("{0}")]
    MasterKey(String),
    /// The database could not be opened.
    #[error("cannot open the database at {url}")]
    Open {
        /// Where (password hidden).
        url: String,
        /// Why.
        source: tessera_domain::store::StoreError,
    },
    /// The schema cannot be used: newer than this binary, pending under `--no-migrate`, or
    /// migrating failed.
    #[error("the database at {url}")]
    Migrate {
        /// Where (password hidden).
        url: String,
        /// Why.
        source: tessera_storage::SchemaError,
    },
    /// Moving the audit events of an earlier release failed.
    #[error("cannot move the earlier release's audit events at {url}")]
    LegacyAudit {
        /// Where (password hidden).
        url: String,
        /// Why.
        source: tessera_domain::store::StoreError,
    },
    /// No master key was found for a database that holds data wrapped by one; none was
    /// generated.
    #[error(
        "this database holds data wrapped by a master key, but no key was found at {} (nor in \
         TESSERA_MASTER_KEY or --master-key-file): restore the key file that belongs to this \
         database (backups keep both). No new key was written: it would open nothing",
        .path.display()
    )]
    KeyMissing {
        /// Where the key was looked for.
        path: std::path::PathBuf,
    },
    /// The master key does not open the data.
    #[error("the master key does not open the data in this database (wrong TESSERA_MASTER_KEY or key file?): {0}")]
    WrongKey(VaultError),
    /// The HSM or KMS holding the key-encrypting key could not be used to check the data.
    #[error("the key custody (HSM or KMS) cannot be used to open the data: {0}")]
    CustodyUnavailable(VaultError),
    /// Sealing proxies written by an earlier release failed.
    #[error("sealing the keys and code of proxies written by an earlier release: {0}")]
    Sealing(VaultError),
    /// The audit stream file cannot be opened.
    #[error("--audit-stream {path}")]
    AuditStream {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Fingerprinting tokens written by an earlier release failed.
    #[error("computing the fingerprints of tokens written by an earlier release: {0}")]
    Fingerprints(VaultError),
    /// The audit writer's thread could not be started.
    #[error("cannot start the audit writer: {0}")]
    AuditWriter(String),
}
