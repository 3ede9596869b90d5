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
    #[error("cannot open the database at {url}: {source}")]
    Open {
        /// Where (password hidden).
        url: String,
        /// Why.
        source: tessera_domain::store::StoreError,
    },
    /// Migrations failed.
    #[error("cannot migrate the database at {url}: {source}")]
    Migrate {
        /// Where (password hidden).
        url: String,
        /// Why.
        source: tessera_domain::store::StoreError,
    },
    /// The master key does not open the data.
    #[error("the master key does not open the data in this database (wrong TESSERA_MASTER_KEY or key file?): {0}")]
    WrongKey(VaultError),
    /// Sealing proxies written by an earlier release failed.
    #[error("sealing the keys and code of proxies written by an earlier release: {0}")]
    Sealing(VaultError),
    /// The audit stream file cannot be opened.
    #[error("--audit-stream {path}: {source}")]
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
