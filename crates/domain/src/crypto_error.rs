//! Why encryption or decryption failed, for the ciphers here and the key custodies that
//! hold the key-encrypting key alike (it names no key and no plaintext).

/// Why encryption or decryption failed. Never carries key material or plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// A key was not 32 bytes of base64.
    #[error("the master key must be base64 of exactly 32 bytes")]
    InvalidKey,
    /// Authentication failed: wrong key, tampered data, or a ciphertext moved to another row.
    #[error("ciphertext failed authentication (wrong master key, or data moved or tampered with)")]
    Authentication,
    /// The ciphertext is shorter than its header or names an unknown version.
    #[error("ciphertext is malformed")]
    Malformed,
    /// The AEAD refused to encrypt (message too long).
    #[error("encryption failed")]
    Encrypt,
    /// A ciphertext names a data-key version this process does not hold (another process
    /// rotated the tenant's data key moments ago, or the version was retired).
    #[error("the data key version {0} is not held")]
    UnknownKeyVersion(u32),
    /// The HSM or KMS holding the key-encrypting key could not be reached (503: retry).
    #[error("the key custody is unavailable: {0}")]
    CustodyUnavailable(String),
}
