//! The webhook signing key: RSA, signing with RSA-PSS and SHA-256 as Basis Theory does, so
//! that its published verification snippet accepts Tessera's signatures (docs/webhooks.md,
//! "Signatures"). One key per deployment, kept wrapped by the key custody like the other
//! deployment keys; its public half is served at `GET /webhooks/signing-key`.
//!
//! Keys are made by the `rsa` crate (generation and PEM) and used by `ring` (constant-time
//! signing).

use base64::{engine::general_purpose::STANDARD, Engine};
use ring::{
    rand::SystemRandom,
    signature::{RsaKeyPair, RSA_PSS_SHA256},
};
use rsa::{
    pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding},
    RsaPrivateKey,
};
use zeroize::Zeroizing;

use crate::crypto::CryptoError;

/// Modulus size of new keys, in bits.
pub const KEY_BITS: usize = 3072;

/// The header value of `<PREFIX>-SIGNATURE-VERSION`.
pub const SIGNATURE_VERSION: &str = "v1";

/// A signing key, ready to sign.
pub struct SigningKey {
    version: u32,
    pair: RsaKeyPair,
    public_pem: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A new key: its PKCS#8 DER (to wrap and store) and its public half as PEM.
pub fn generate() -> Result<(Zeroizing<Vec<u8>>, String), CryptoError> {
    let mut rng = aes_gcm::aead::OsRng;
    let private = RsaPrivateKey::new(&mut rng, KEY_BITS).map_err(|_| CryptoError::Encrypt)?;
    let der = private.to_pkcs8_der().map_err(|_| CryptoError::Encrypt)?;
    let pem = private
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|_| CryptoError::Encrypt)?;
    Ok((Zeroizing::new(der.as_bytes().to_vec()), pem))
}

impl SigningKey {
    /// The key `version` from its PKCS#8 DER.
    pub fn from_pkcs8(version: u32, der: &[u8]) -> Result<Self, CryptoError> {
        let pair = RsaKeyPair::from_pkcs8(der).map_err(|_| CryptoError::InvalidKey)?;
        let public_pem = RsaPrivateKey::from_pkcs8_der(der)
            .map_err(|_| CryptoError::InvalidKey)?
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|_| CryptoError::InvalidKey)?;
        Ok(Self {
            version,
            pair,
            public_pem,
        })
    }

    /// Its version (1 for the deployment's first key).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The public half, as a PEM `PUBLIC KEY` (SubjectPublicKeyInfo).
    pub fn public_pem(&self) -> &str {
        &self.public_pem
    }

    /// The base64 RSA-PSS/SHA-256 signature of `body`.
    pub fn sign(&self, body: &[u8]) -> Result<String, CryptoError> {
        let mut signature = vec![0u8; self.pair.public().modulus_len()];
        self.pair
            .sign(&RSA_PSS_SHA256, &SystemRandom::new(), body, &mut signature)
            .map_err(|_| CryptoError::Encrypt)?;
        Ok(STANDARD.encode(signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, RSA_PSS_2048_8192_SHA256};
    use rsa::{pkcs8::DecodePublicKey, traits::PublicKeyParts, RsaPublicKey};

    #[test]
    fn a_signature_verifies_with_the_published_pem_and_not_for_another_body() {
        let (der, pem) = generate().expect("generate");
        let key = SigningKey::from_pkcs8(1, &der).expect("load");
        assert_eq!(key.public_pem(), pem);
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"));
        let body = br#"{"delivered_at":"x","event":{}}"#;
        let signature = STANDARD.decode(key.sign(body).expect("sign")).expect("b64");
        let public = RsaPublicKey::from_public_key_pem(&pem).expect("pem");
        assert_eq!(public.size() * 8, KEY_BITS);
        let mut pkcs1 = Vec::new();
        {
            use rsa::pkcs1::EncodeRsaPublicKey;
            pkcs1.extend_from_slice(public.to_pkcs1_der().expect("der").as_bytes());
        }
        let verifier = UnparsedPublicKey::new(&RSA_PSS_2048_8192_SHA256, &pkcs1);
        verifier.verify(body, &signature).expect("verifies");
        assert!(verifier.verify(b"{}", &signature).is_err());
        assert!(!format!("{key:?}").contains("BEGIN"));
    }
}
