//! Keyed lookup hashes, for credentials that must be found before their tenant is known (a
//! proxy's invocation key): the database keeps only `HMAC-SHA-256(lookup key, credential)`,
//! and the lookup key is itself wrapped by the master key, so a copy of the database alone can
//! neither read a credential nor test a guess against it.

use hmac::{digest::KeyInit, Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

/// Bytes of a lookup key.
pub const LOOKUP_KEY_LEN: usize = 32;
/// SHA-256's block: HMAC pads shorter keys to it with zeros.
const BLOCK: usize = 64;

/// Name under which the proxy-key lookup key is stored (wrapped) in the vault-key table.
pub const PROXY_KEY_LOOKUP: &str = "proxy-key-lookup";

/// The HMAC key of lookup hashes, kept as the zero-padded block HMAC uses. Held in memory
/// only, wiped when dropped.
pub struct LookupKey(Zeroizing<[u8; BLOCK]>);

impl LookupKey {
    /// A key from exactly [`LOOKUP_KEY_LEN`] bytes; `None` for any other length.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != LOOKUP_KEY_LEN {
            return None;
        }
        let mut block = Zeroizing::new([0u8; BLOCK]);
        block[..LOOKUP_KEY_LEN].copy_from_slice(bytes);
        Some(Self(block))
    }

    /// The lookup hash of `credential`.
    pub fn digest(&self, credential: &str) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as KeyInit>::new(self.0.as_ref().into());
        mac.update(credential.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

impl std::fmt::Debug for LookupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LookupKey(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_keyed_and_stable() {
        let a = LookupKey::from_bytes(&[1; 32]).expect("32 bytes");
        let b = LookupKey::from_bytes(&[2; 32]).expect("32 bytes");
        assert!(LookupKey::from_bytes(&[1; 31]).is_none());
        // The same as HMAC with the 32-byte key itself.
        let mut plain = <Hmac<Sha256> as Mac>::new_from_slice(&[1; 32]).expect("any length");
        plain.update(b"k");
        assert_eq!(
            a.digest("k"),
            <[u8; 32]>::from(plain.finalize().into_bytes())
        );
        assert_eq!(a.digest("k"), a.digest("k"));
        assert_ne!(a.digest("k"), a.digest("l"));
        assert_ne!(a.digest("k"), b.digest("k"), "another key, another digest");
        assert_eq!(format!("{a:?}"), "LookupKey(***)");
    }
}
