//! API keys: generated from the OS CSPRNG, stored only as a SHA-256 hash, compared in constant
//! time. A key has ~190 bits of entropy, so a fast hash is sufficient (no password-style KDF).

use rand::{distr::Alphanumeric, rand_core::UnwrapErr, rngs::SysRng, RngExt};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::secret::Secret;

/// Every key starts with this.
pub const PREFIX: &str = "key_";
/// Random base62 characters after the prefix.
pub const RANDOM_CHARS: usize = 32;

/// A plaintext API key. Shown to the caller once (on create or regenerate), never stored.
#[derive(Debug, Clone)]
pub struct ApiKey(Secret<String>);

impl ApiKey {
    /// A fresh key: `key_` + 32 base62 characters from the OS CSPRNG.
    pub fn generate() -> Self {
        let random: String = UnwrapErr(SysRng)
            .sample_iter(&Alphanumeric)
            .take(RANDOM_CHARS)
            .map(char::from)
            .collect();
        Self(Secret::new(format!("{PREFIX}{random}")))
    }

    /// Accepts a presented key if it has the right shape; `None` for anything else.
    pub fn parse(raw: &str) -> Option<Self> {
        let random = raw.strip_prefix(PREFIX)?;
        (random.len() == RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| Self(Secret::new(raw.to_string())))
    }

    /// The plaintext, for showing to the caller exactly once.
    pub fn expose(&self) -> &str {
        self.0.expose()
    }

    /// The SHA-256 hash under which the key is stored and looked up.
    pub fn hash(&self) -> ApiKeyHash {
        ApiKeyHash(Sha256::digest(self.0.expose().as_bytes()).into())
    }
}

/// SHA-256 of an API key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeyHash([u8; 32]);

impl ApiKeyHash {
    /// Wraps stored bytes; `None` unless exactly 32.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }

    /// The raw digest, for storage.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Constant-time equality, so comparison time reveals nothing about the stored hash.
    pub fn verify(&self, other: &ApiKeyHash) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl std::fmt::Debug for ApiKeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKeyHash(…)")
    }
}

/// One of an application's API keys, without the key: only its hash is stored, and the key
/// is shown once, when it is issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplicationKey {
    /// Identifier.
    pub id: crate::ids::ApplicationKeyId,
    /// The application it authenticates as.
    pub application_id: crate::ids::ApplicationId,
    /// Application that issued it.
    pub created_by: crate::ids::ApplicationId,
    /// When it was issued.
    pub created_at: time::OffsetDateTime,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_documented_shape_and_differ() {
        let a = ApiKey::generate();
        let b = ApiKey::generate();
        assert_eq!(a.expose().len(), PREFIX.len() + RANDOM_CHARS);
        assert!(a.expose().starts_with(PREFIX));
        assert!(ApiKey::parse(a.expose()).is_some());
        assert_ne!(a.expose(), b.expose());
        assert_eq!(format!("{a:?}"), "ApiKey(***)");
    }

    #[test]
    fn parse_rejects_other_shapes() {
        assert!(ApiKey::parse("").is_none());
        assert!(ApiKey::parse("key_short").is_none());
        assert!(ApiKey::parse(&format!("key_{}", "-".repeat(RANDOM_CHARS))).is_none());
        assert!(ApiKey::parse(&format!("pk_{}", "a".repeat(RANDOM_CHARS))).is_none());
    }

    #[test]
    fn hash_is_sha256_and_verifies() {
        let k = ApiKey::parse(&format!("key_{}", "a".repeat(RANDOM_CHARS))).expect("shape");
        let h = k.hash();
        assert!(h.verify(&k.hash()));
        assert!(!h.verify(&ApiKey::generate().hash()));
        assert_eq!(ApiKeyHash::from_bytes(h.as_bytes()), Some(h.clone()));
        assert!(ApiKeyHash::from_bytes(&[0; 31]).is_none());
    }
}
