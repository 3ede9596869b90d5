//! Why an import stopped.

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The import was set up wrong (a URL, a key, a header prefix).
    #[error("{0}")]
    Config(String),
    /// The export could not be read.
    #[error("reading the export: {0}")]
    Io(String),
    /// The server refused the import's key (401, 403): nothing more can be stored.
    #[error("the server refused the import's key: {0}")]
    Refused(String),
    /// The server kept failing, or answered what an import cannot act on.
    #[error("the server: {0}")]
    Server(String),
}
