//! Key custody: where the key-encrypting key lives, and the one thing it does, wrapping and
//! unwrapping the keys below it (docs/operations.md, "Where the master key lives").
//!
//! ```text
//!   key-encrypting key (a file, an HSM over PKCS#11, a cloud KMS; never leaves it)
//!        └─wraps─► each tenant's data key, and the deployment's vault keys (stored wrapped)
//!                      └─seal─► token data, proxy secrets, sessions, …
//! ```
//!
//! The vault calls a custody only when a process first needs a key (at start-up, for a new
//! tenant, after a rotation), never per request: unwrapped keys are held in memory, wiped on
//! drop. Each custody binds what it wraps to what it is for (a tenant's data key cannot be
//! unwrapped as another tenant's, nor as a vault key): as AES-GCM additional data in a file or
//! an HSM, as the `EncryptionContext` of a KMS.

use async_trait::async_trait;
use zeroize::Zeroizing;

use crate::{crypto_error::CryptoError, ids::TenantId};

/// What a wrapped key is for: bound into its wrapping, so it opens only for that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapPurpose<'a> {
    /// A tenant's data key.
    DataKey(TenantId),
    /// A deployment-wide key by name (the proxy-key lookup key, the cursor key).
    VaultKey(&'a str),
    /// A later version (2, 3, …) of a tenant's data key (docs/operations.md, "Rotating data
    /// keys"); version 1 is [`WrapPurpose::DataKey`].
    DataKeyVersion(TenantId, u32),
    /// A tenant's index keys (fingerprints, search indexes, idempotent requests), kept apart
    /// from its data keys once they rotate.
    IndexKeys(TenantId),
}

impl WrapPurpose<'_> {
    /// The additional authenticated data of an AES-GCM wrapping (the file and PKCS#11
    /// custodies). The file custody's wrappings from before custodies existed used exactly
    /// these bytes, so they still open.
    pub fn aad(&self) -> Vec<u8> {
        match self {
            WrapPurpose::DataKey(tenant) => {
                let mut aad = b"tessera/data-key/v1\0".to_vec();
                aad.extend_from_slice(tenant.as_uuid().as_bytes());
                aad
            }
            WrapPurpose::VaultKey(name) => {
                let mut aad = b"tessera/vault-key/v1\0".to_vec();
                aad.extend_from_slice(name.as_bytes());
                aad
            }
            WrapPurpose::DataKeyVersion(tenant, version) => {
                let mut aad = b"tessera/data-key-version/v1\0".to_vec();
                aad.extend_from_slice(tenant.as_uuid().as_bytes());
                aad.extend_from_slice(&version.to_be_bytes());
                aad
            }
            WrapPurpose::IndexKeys(tenant) => {
                let mut aad = b"tessera/index-keys/v1\0".to_vec();
                aad.extend_from_slice(tenant.as_uuid().as_bytes());
                aad
            }
        }
    }

    /// The same binding as key/value pairs (a KMS's `EncryptionContext`).
    pub fn context(&self) -> Vec<(&'static str, String)> {
        match self {
            WrapPurpose::DataKey(tenant) => vec![
                ("purpose", "data-key".into()),
                ("tenant", tenant.to_string()),
            ],
            WrapPurpose::VaultKey(name) => vec![
                ("purpose", "vault-key".into()),
                ("name", (*name).to_string()),
            ],
            WrapPurpose::DataKeyVersion(tenant, version) => vec![
                ("purpose", "data-key".into()),
                ("tenant", tenant.to_string()),
                ("version", version.to_string()),
            ],
            WrapPurpose::IndexKeys(tenant) => vec![
                ("purpose", "index-keys".into()),
                ("tenant", tenant.to_string()),
            ],
        }
    }
}

/// Where the key-encrypting key lives. Implemented here by [`crate::MasterKey`] (a key held in
/// memory, from a file or the environment), and by the PKCS#11 and KMS crates.
#[async_trait]
pub trait KeyCustody: Send + Sync + std::fmt::Debug {
    /// What it is, for logs and reports (`file`, `pkcs11 token "prod" key "tessera-kek"`, …);
    /// never secret.
    fn describe(&self) -> String;

    /// Wraps `plain` for `purpose`.
    async fn wrap(&self, purpose: WrapPurpose<'_>, plain: &[u8]) -> Result<Vec<u8>, CryptoError>;

    /// Unwraps what [`KeyCustody::wrap`] produced for the same `purpose`. A wrapping by
    /// another key, for another purpose, or tampered with is
    /// [`CryptoError::Authentication`]; a custody that cannot be reached is
    /// [`CryptoError::CustodyUnavailable`].
    async fn unwrap(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purposes_bind_differently() {
        let (a, b) = (TenantId::new(), TenantId::new());
        assert_ne!(WrapPurpose::DataKey(a).aad(), WrapPurpose::DataKey(b).aad());
        assert_ne!(
            WrapPurpose::VaultKey("x").aad(),
            WrapPurpose::VaultKey("y").aad()
        );
        assert_eq!(WrapPurpose::DataKey(a).context()[1].1, a.to_string());
    }
}
