//! Envelope encryption of token data (AES-256-GCM via the `aes-gcm` crate).
//!
//! ```text
//!   master key (config/env, never stored) ──wraps──► tenant data key (stored wrapped, per tenant)
//!   tenant data key ──encrypts──► token data (stored as ciphertext)
//! ```
//!
//! A ciphertext under a tenant's first data key is `1 ‖ nonce (12 bytes) ‖ ciphertext+tag`; under
//! a later version of its data key (docs/operations.md, "Rotating data keys") it is
//! `2 ‖ key version (4 bytes, big-endian) ‖ nonce ‖ ciphertext+tag`, so that each row names the
//! key version that opens it. A fresh random nonce per encryption. The associated data binds each ciphertext to where it belongs — the
//! tenant for a wrapped data key, the tenant *and* token id for token data — so a ciphertext copied
//! into another row (or another tenant) fails authentication instead of decrypting.

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::{
    aead::{Aead, AeadCore, KeyInit, OsRng, Payload},
    Aes256Gcm, Key, Nonce,
};
use base64::{engine::general_purpose::STANDARD, Engine as _};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::{
    custody::{KeyCustody, WrapPurpose},
    ids::{TenantId, TokenId},
    secret::Secret,
};

/// The first byte of a ciphertext under a tenant's first data key (and of a file custody's
/// wrapping).
const VERSION: u8 = 1;
/// The first byte of a ciphertext naming its data key's version.
const VERSIONED: u8 = 2;
const NONCE_LEN: usize = 12;
const KEY_LEN: usize = 32;
const TAG_LEN: usize = 16;

pub use crate::crypto_error::CryptoError;

/// The key-encryption key. Supplied by configuration; only ever held in memory.
pub struct MasterKey(Zeroizing<[u8; KEY_LEN]>);

impl MasterKey {
    /// A fresh random key from the OS CSPRNG.
    pub fn generate() -> Self {
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        OsRng.fill_bytes(key.as_mut());
        Self(key)
    }

    /// Decodes base64 (standard alphabet, padded) of exactly 32 bytes; surrounding whitespace is
    /// ignored so a key file may end with a newline.
    pub fn from_base64(encoded: &str) -> Result<Self, CryptoError> {
        let bytes = Zeroizing::new(
            STANDARD
                .decode(encoded.trim())
                .map_err(|_| CryptoError::InvalidKey)?,
        );
        let key: [u8; KEY_LEN] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| CryptoError::InvalidKey)?;
        Ok(Self(Zeroizing::new(key)))
    }

    /// The base64 form, for writing a generated key to a file.
    pub fn to_base64(&self) -> Secret<String> {
        Secret::new(STANDARD.encode(self.0.as_ref()))
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(self.0.as_ref()))
    }

    /// Wraps a new random data key for `tenant`.
    pub fn new_wrapped_data_key(&self, tenant: TenantId) -> Result<Vec<u8>, CryptoError> {
        let mut data_key = Zeroizing::new([0u8; KEY_LEN]);
        OsRng.fill_bytes(data_key.as_mut());
        seal(
            &self.cipher(),
            &WrapPurpose::DataKey(tenant).aad(),
            data_key.as_ref(),
        )
    }

    /// Re-wraps `tenant`'s data key, wrapped by this key, under `to`. The data key itself (and
    /// so every token ciphertext) is unchanged.
    pub fn rewrap_data_key(
        &self,
        tenant: TenantId,
        wrapped: &[u8],
        to: &MasterKey,
    ) -> Result<Vec<u8>, CryptoError> {
        let plain = open(&self.cipher(), &WrapPurpose::DataKey(tenant).aad(), wrapped)?;
        if plain.len() != KEY_LEN {
            return Err(CryptoError::Malformed);
        }
        seal(&to.cipher(), &WrapPurpose::DataKey(tenant).aad(), &plain)
    }

    /// Unwraps `tenant`'s data key; fails if the wrapped key belongs to another tenant or the
    /// master key is not the one that wrapped it.
    pub fn unwrap_data_key(
        &self,
        tenant: TenantId,
        wrapped: &[u8],
    ) -> Result<DataKey, CryptoError> {
        let plain = open(&self.cipher(), &WrapPurpose::DataKey(tenant).aad(), wrapped)?;
        if plain.len() != KEY_LEN {
            return Err(CryptoError::Malformed);
        }
        DataKey::from_bytes(&plain)
    }
}

/// The file custody: the key-encrypting key is this key, in memory. Its wrappings are the
/// same bytes as before custodies existed.
#[async_trait::async_trait]
impl KeyCustody for MasterKey {
    fn describe(&self) -> String {
        "file".to_string()
    }

    async fn wrap(&self, purpose: WrapPurpose<'_>, plain: &[u8]) -> Result<Vec<u8>, CryptoError> {
        seal(&self.cipher(), &purpose.aad(), plain)
    }

    async fn unwrap(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        open(&self.cipher(), &purpose.aad(), wrapped)
    }
}

/// A fresh random 32-byte key from the OS CSPRNG, wiped when dropped.
pub fn random_key() -> Zeroizing<[u8; KEY_LEN]> {
    let mut key = Zeroizing::new([0u8; KEY_LEN]);
    OsRng.fill_bytes(key.as_mut());
    key
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(***)")
    }
}

/// A tenant's unwrapped data keys, ready to encrypt and decrypt that tenant's token data: the
/// current version (what seals) and the older versions still in use (what opens the rows not
/// yet re-encrypted), and the index keys (fingerprints, search indexes, idempotent requests),
/// which never change with the data key's version.
pub struct DataKey {
    /// The version new ciphertexts are sealed under.
    current: u32,
    /// Every version held, the current among them.
    ciphers: Vec<(u32, Aes256Gcm)>,
    /// HMAC-SHA-256 keyed with HKDF-SHA-256(first data key, info [`FINGERPRINT_INFO`]): a
    /// separate key, so a fingerprint reveals nothing about the encryption key, and one per
    /// tenant (equal data in two tenants never fingerprints alike).
    fingerprint: Hmac<Sha256>,
    /// HMAC-SHA-256 keyed with HKDF-SHA-256(first data key, info [`REQUEST_INFO`]), for the
    /// hash of an idempotent request kept beside its answer: unkeyed, a database copy alone
    /// recovered a card number from it by guessing.
    request: Hmac<Sha256>,
    /// HMAC-SHA-256 keyed with HKDF-SHA-256(first data key, info [`SEARCH_INFO`]), for the
    /// search index values a `data:` term matches: per tenant, and apart from the fingerprint
    /// key.
    search: Hmac<Sha256>,
}

/// HKDF `info` of the fingerprint key: names its purpose so no other derivation collides.
const FINGERPRINT_INFO: &[u8] = b"tessera token fingerprint v1";
/// HKDF `info` of the idempotent-request key.
const REQUEST_INFO: &[u8] = b"tessera idempotent request v1";
/// HKDF `info` of the search index key.
const SEARCH_INFO: &[u8] = b"tessera token search index v1";

/// Bytes of a tenant's index keys (fingerprint, idempotent request, search), as stored wrapped
/// once its first data key may be retired.
pub const INDEX_KEYS_LEN: usize = 3 * KEY_LEN;

/// The index keys derived from a tenant's first data key, in [`INDEX_KEYS_LEN`] bytes: what
/// keeps fingerprints, search indexes and idempotent requests stable across data-key versions.
pub fn derive_index_keys(first: &[u8]) -> Result<Zeroizing<[u8; INDEX_KEYS_LEN]>, CryptoError> {
    let hkdf = Hkdf::<Sha256>::new(None, first);
    let mut keys = Zeroizing::new([0u8; INDEX_KEYS_LEN]);
    for (i, info) in [FINGERPRINT_INFO, REQUEST_INFO, SEARCH_INFO]
        .iter()
        .enumerate()
    {
        hkdf.expand(info, &mut keys[i * KEY_LEN..(i + 1) * KEY_LEN])
            .map_err(|_| CryptoError::InvalidKey)?;
    }
    Ok(keys)
}

impl DataKey {
    /// A tenant with one data key (version 1), its index keys derived from it.
    pub(crate) fn from_bytes(plain: &[u8]) -> Result<Self, CryptoError> {
        Self::from_versions(&[(1, plain)], 1, &*derive_index_keys(plain)?)
    }

    /// A tenant's keys: each held version's 32 bytes, the current version (one of them) and
    /// the [`INDEX_KEYS_LEN`] bytes of its index keys.
    pub(crate) fn from_versions(
        versions: &[(u32, &[u8])],
        current: u32,
        index_keys: &[u8],
    ) -> Result<Self, CryptoError> {
        if index_keys.len() != INDEX_KEYS_LEN
            || versions.iter().any(|(_, k)| k.len() != KEY_LEN)
            || !versions.iter().any(|(v, _)| *v == current)
        {
            return Err(CryptoError::InvalidKey);
        }
        let mac = |i: usize| {
            <Hmac<Sha256> as Mac>::new_from_slice(&index_keys[i * KEY_LEN..(i + 1) * KEY_LEN])
                .map_err(|_| CryptoError::InvalidKey)
        };
        Ok(DataKey {
            current,
            ciphers: versions
                .iter()
                .map(|(v, k)| (*v, Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(k))))
                .collect(),
            fingerprint: mac(0)?,
            request: mac(1)?,
            search: mac(2)?,
        })
    }

    /// The version new ciphertexts are sealed under.
    pub fn current_version(&self) -> u32 {
        self.current
    }

    /// Whether this holds `version`.
    pub fn holds(&self, version: u32) -> bool {
        self.ciphers.iter().any(|(v, _)| *v == version)
    }

    fn cipher(&self, version: u32) -> Result<&Aes256Gcm, CryptoError> {
        self.ciphers
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, c)| c)
            .ok_or(CryptoError::UnknownKeyVersion(version))
    }

    fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, CryptoError> {
        seal_versioned(self.cipher(self.current)?, self.current, aad, plaintext)
    }

    fn open(&self, aad: &[u8], blob: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let version = key_version(blob).ok_or(CryptoError::Malformed)?;
        open_versioned(self.cipher(version)?, aad, blob)
    }

    /// HMAC-SHA-256 of a search index value (or of a `data:` term) under this tenant's search
    /// key: what the index stores and a search compares, never the value.
    pub fn search_hash(&self, value: &str) -> [u8; 32] {
        let mut mac = self.search.clone();
        mac.update(value.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// HMAC-SHA-256, under this tenant's idempotent-request key, of `parts`, each prefixed
    /// with its length so that no two different sequences hash alike.
    pub fn request_hash(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.request.clone();
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// HMAC-SHA-256 of `input` under this tenant's fingerprint key, as 64 lowercase hex digits.
    pub fn fingerprint(&self, input: &[u8]) -> String {
        let mut mac = self.fingerprint.clone();
        mac.update(input);
        crate::hex::encode(&mac.finalize().into_bytes())
    }

    /// Encrypts token data, bound to its tenant and id, and to its destination `binding`
    /// (the patterns, see [`crate::binding::Destinations::sealed_form`]; empty: unbound), so
    /// that a binding widened directly in the database no longer opens the data.
    pub fn seal_token(
        &self,
        tenant: TenantId,
        token: &TokenId,
        binding: &[u8],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        self.seal(&token_aad(tenant, token, binding), plaintext)
    }

    /// Decrypts token data; fails if the ciphertext belongs to another tenant or token, or
    /// was sealed with another binding.
    pub fn open_token(
        &self,
        tenant: TenantId,
        token: &TokenId,
        binding: &[u8],
        ciphertext: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        self.open(&token_aad(tenant, token, binding), ciphertext)
    }

    /// Encrypts any other tenant secret, bound to the tenant and a caller-chosen `purpose`
    /// string and record id (e.g. a proxy's configuration).
    pub fn seal_record(
        &self,
        tenant: TenantId,
        purpose: &str,
        record: &[u8],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        self.seal(&record_aad(tenant, purpose, record), plaintext)
    }

    /// Decrypts what [`DataKey::seal_record`] produced.
    pub fn open_record(
        &self,
        tenant: TenantId,
        purpose: &str,
        record: &[u8],
        ciphertext: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        self.open(&record_aad(tenant, purpose, record), ciphertext)
    }

    /// `ciphertext`, sealed again for the same `tenant`, `purpose` and `record` under the
    /// current version; `None` when it already is (re-encryption after a rotation).
    pub fn reseal_record(
        &self,
        tenant: TenantId,
        purpose: &str,
        record: &[u8],
        ciphertext: &[u8],
    ) -> Result<Option<Vec<u8>>, CryptoError> {
        self.reseal(&record_aad(tenant, purpose, record), ciphertext)
    }

    /// As [`DataKey::reseal_record`], for token data.
    pub fn reseal_token(
        &self,
        tenant: TenantId,
        token: &TokenId,
        binding: &[u8],
        ciphertext: &[u8],
    ) -> Result<Option<Vec<u8>>, CryptoError> {
        self.reseal(&token_aad(tenant, token, binding), ciphertext)
    }

    fn reseal(&self, aad: &[u8], ciphertext: &[u8]) -> Result<Option<Vec<u8>>, CryptoError> {
        if key_version(ciphertext) == Some(self.current) {
            return Ok(None);
        }
        let plain = self.open(aad, ciphertext)?;
        self.seal(aad, &plain).map(Some)
    }
}

/// Bytes of plaintext in `ciphertext` (its header, nonce and tag are fixed): what AES-GCM never
/// hides, known before decrypting.
pub fn plaintext_len(ciphertext: &[u8]) -> usize {
    let header = match ciphertext.first() {
        Some(&VERSIONED) => 5,
        _ => 1,
    };
    ciphertext
        .len()
        .saturating_sub(header + NONCE_LEN + TAG_LEN)
}

/// The data-key version a tenant ciphertext is sealed under, from its header; `None` when it is
/// not one.
pub fn key_version(ciphertext: &[u8]) -> Option<u32> {
    match ciphertext {
        [VERSION, ..] => Some(1),
        [VERSIONED, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(***)")
    }
}

/// The additional data of a token's ciphertext. An unbound token's is what it was before
/// bindings existed, so its ciphertext still opens. A token whose id is a UUID binds its 16
/// bytes, as every token did before ids could be chosen freely; a chosen id binds its length
/// and text under a label of its own, so neither form can pass for the other.
fn token_aad(tenant: TenantId, token: &TokenId, binding: &[u8]) -> Vec<u8> {
    let mut aad = match token.as_uuid() {
        Some(_) => b"tessera/token/v1\0".to_vec(),
        None => b"tessera/token/id\0".to_vec(),
    };
    aad.extend_from_slice(tenant.as_uuid().as_bytes());
    if token.as_uuid().is_none() {
        aad.extend_from_slice(&(token.as_bytes().len() as u32).to_be_bytes());
    }
    aad.extend_from_slice(token.as_bytes());
    if !binding.is_empty() {
        aad.extend_from_slice(b"\0bound\0");
        aad.extend_from_slice(binding);
    }
    aad
}

fn record_aad(tenant: TenantId, purpose: &str, record: &[u8]) -> Vec<u8> {
    let mut aad = b"tessera/record/v1\0".to_vec();
    aad.extend_from_slice(tenant.as_uuid().as_bytes());
    aad.extend_from_slice(purpose.as_bytes());
    aad.push(0);
    aad.extend_from_slice(record);
    aad
}

fn seal(cipher: &Aes256Gcm, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
    let ciphertext = cipher
        .encrypt(
            &nonce,
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .map_err(|_| CryptoError::Encrypt)?;
    let mut out = Vec::with_capacity(1 + NONCE_LEN + ciphertext.len());
    out.push(VERSION);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ciphertext);
    Ok(out)
}

/// Seals under data-key `version`: version 1 in the original form (the rows of tenants never
/// rotated are as before), later ones with the version in the header.
fn seal_versioned(
    cipher: &Aes256Gcm,
    version: u32,
    aad: &[u8],
    plaintext: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    let sealed = seal(cipher, aad, plaintext)?;
    if version == 1 {
        return Ok(sealed);
    }
    let mut out = Vec::with_capacity(sealed.len() + 4);
    out.push(VERSIONED);
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&sealed[1..]);
    Ok(out)
}

/// Opens what [`seal_versioned`] sealed (the caller chose `cipher` by the header's version).
fn open_versioned(
    cipher: &Aes256Gcm,
    aad: &[u8],
    blob: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    match blob.split_first() {
        Some((&VERSIONED, rest)) if rest.len() > 4 => {
            let mut unversioned = Vec::with_capacity(rest.len() - 3);
            unversioned.push(VERSION);
            unversioned.extend_from_slice(&rest[4..]);
            open(cipher, aad, &unversioned)
        }
        _ => open(cipher, aad, blob),
    }
}

fn open(cipher: &Aes256Gcm, aad: &[u8], blob: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    match blob.split_first() {
        Some((&VERSION, rest)) if rest.len() > NONCE_LEN => {
            let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
            cipher
                .decrypt(
                    Nonce::from_slice(nonce),
                    Payload {
                        msg: ciphertext,
                        aad,
                    },
                )
                .map(Zeroizing::new)
                .map_err(|_| CryptoError::Authentication)
        }
        _ => Err(CryptoError::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    /// A later data-key version: ciphertexts name it, each opens under its own version while
    /// both are held, a re-seal moves a row to the current one, a version not held is
    /// reported as such, and the index keys do not change with the version.
    #[test]
    fn versions_seal_open_and_reseal_with_stable_index_keys() {
        let (tenant, token) = (TenantId::new(), TokenId::new());
        let (first, second) = (random_key(), random_key());
        let only_first = DataKey::from_bytes(first.as_ref()).expect("v1");
        let index = derive_index_keys(first.as_ref()).expect("index keys");
        let both = DataKey::from_versions(
            &[(1, first.as_ref()), (2, second.as_ref())],
            2,
            index.as_ref(),
        )
        .expect("v1 and v2");
        let only_second =
            DataKey::from_versions(&[(2, second.as_ref())], 2, index.as_ref()).expect("v2");

        let old = only_first
            .seal_token(tenant, &token, b"", b"card")
            .expect("v1");
        let new = both.seal_token(tenant, &token, b"", b"card").expect("v2");
        assert_eq!((key_version(&old), key_version(&new)), (Some(1), Some(2)));
        assert_eq!(plaintext_len(&new), 4);
        assert_eq!(
            &**both.open_token(tenant, &token, b"", &old).expect("open v1"),
            b"card"
        );
        assert_eq!(
            &**both.open_token(tenant, &token, b"", &new).expect("open v2"),
            b"card"
        );
        assert_eq!(
            only_second.open_token(tenant, &token, b"", &old).err(),
            Some(CryptoError::UnknownKeyVersion(1))
        );
        let moved = both
            .reseal_token(tenant, &token, b"", &old)
            .expect("reseal")
            .expect("moved");
        assert_eq!(key_version(&moved), Some(2));
        assert_eq!(
            &**only_second
                .open_token(tenant, &token, b"", &moved)
                .expect("open"),
            b"card"
        );
        assert_eq!(both.reseal_token(tenant, &token, b"", &moved), Ok(None));
        // Bound as before: another token's row does not open, whatever the version.
        assert!(both
            .open_token(tenant, &TokenId::new(), b"", &moved)
            .is_err());
        // A version header altered in the database names another key: refused.
        let mut renamed = moved.clone();
        renamed[4] = 1;
        assert!(both.open_token(tenant, &token, b"", &renamed).is_err());

        assert_eq!(only_first.fingerprint(b"x"), only_second.fingerprint(b"x"));
        assert_eq!(only_first.search_hash("x"), only_second.search_hash("x"));
        assert_eq!(
            only_first.request_hash(&[b"x"]),
            only_second.request_hash(&[b"x"])
        );
        assert!(DataKey::from_versions(&[(2, second.as_ref())], 3, index.as_ref()).is_err());
    }

    #[test]
    fn round_trips_and_never_stores_plaintext() {
        let master = MasterKey::generate();
        let tenant = TenantId::new();
        let token = TokenId::new();
        let wrapped = master.new_wrapped_data_key(tenant).expect("wrap");
        let key = master.unwrap_data_key(tenant, &wrapped).expect("unwrap");
        let plaintext = br#"{"number":"4242424242424242"}"#;
        let ct = key
            .seal_token(tenant, &token, b"", plaintext)
            .expect("seal");
        assert!(!ct.windows(16).any(|w| w == b"4242424242424242"));
        assert_eq!(
            key.open_token(tenant, &token, b"", &ct)
                .expect("open")
                .as_slice(),
            plaintext
        );
        assert_eq!(plaintext_len(&ct), plaintext.len());
        // Fresh nonce each time: same plaintext, different ciphertext.
        assert_ne!(
            ct,
            key.seal_token(tenant, &token, b"", plaintext)
                .expect("seal")
        );
    }

    #[test]
    fn a_ciphertext_moved_to_another_row_or_tenant_fails() {
        let master = MasterKey::generate();
        let tenant = TenantId::new();
        let key = master
            .unwrap_data_key(tenant, &master.new_wrapped_data_key(tenant).expect("wrap"))
            .expect("unwrap");
        let token = TokenId::new();
        let ct = key
            .seal_token(tenant, &token, b"", b"secret")
            .expect("seal");
        assert_eq!(
            key.open_token(tenant, &TokenId::new(), b"", &ct),
            Err(CryptoError::Authentication)
        );
        assert_eq!(
            key.open_token(tenant, &token, b"evil.example", &ct),
            Err(CryptoError::Authentication),
            "bound to its destinations: a widened binding does not open it"
        );
        assert_eq!(
            key.open_token(TenantId::new(), &token, b"", &ct),
            Err(CryptoError::Authentication)
        );
        let mut tampered = ct.clone();
        if let Some(last) = tampered.last_mut() {
            *last ^= 1;
        }
        assert_eq!(
            key.open_token(tenant, &token, b"", &tampered),
            Err(CryptoError::Authentication)
        );
        assert_eq!(
            key.open_token(tenant, &token, b"", &ct[..5]),
            Err(CryptoError::Malformed)
        );
    }

    #[test]
    fn a_chosen_id_binds_its_text_and_never_passes_for_a_uuid() {
        let master = MasterKey::generate();
        let tenant = TenantId::new();
        let key = master
            .unwrap_data_key(tenant, &master.new_wrapped_data_key(tenant).expect("wrap"))
            .expect("unwrap");
        let phone: TokenId = "1234_phone".parse().expect("id");
        let ct = key
            .seal_token(tenant, &phone, b"", b"secret")
            .expect("seal");
        assert_eq!(
            &key.open_token(tenant, &phone, b"", &ct).expect("open")[..],
            b"secret"
        );
        let other: TokenId = "1234_phonf".parse().expect("id");
        assert!(key.open_token(tenant, &other, b"", &ct).is_err());
        // Sixteen characters of text are not the UUID of the same bytes.
        let text: TokenId = "abcdefghijklmnop".parse().expect("id");
        let uuid = TokenId::from_uuid(uuid::Uuid::from_bytes(*b"abcdefghijklmnop"));
        let sealed = key.seal_token(tenant, &text, b"", b"x").expect("seal");
        assert!(key.open_token(tenant, &uuid, b"", &sealed).is_err());
    }

    #[test]
    fn rewrapping_moves_a_data_key_to_a_new_master_unchanged() {
        let (old, new) = (MasterKey::generate(), MasterKey::generate());
        let tenant = TenantId::new();
        let token = TokenId::new();
        let wrapped = old.new_wrapped_data_key(tenant).expect("wrap");
        let sealed = old
            .unwrap_data_key(tenant, &wrapped)
            .expect("unwrap")
            .seal_token(tenant, &token, b"", b"4242")
            .expect("seal");
        let rewrapped = old.rewrap_data_key(tenant, &wrapped, &new).expect("rewrap");
        assert!(old.unwrap_data_key(tenant, &rewrapped).is_err());
        let key = new
            .unwrap_data_key(tenant, &rewrapped)
            .expect("new master opens it");
        assert_eq!(
            &key.open_token(tenant, &token, b"", &sealed).expect("open")[..],
            b"4242"
        );
        assert!(
            new.rewrap_data_key(tenant, &wrapped, &old).is_err(),
            "wrong key"
        );
        assert!(
            old.rewrap_data_key(TenantId::new(), &wrapped, &new)
                .is_err(),
            "bound to its tenant"
        );
    }

    #[test]
    fn a_wrapped_key_only_opens_for_its_tenant_and_master() {
        let master = MasterKey::generate();
        let tenant = TenantId::new();
        let wrapped = master.new_wrapped_data_key(tenant).expect("wrap");
        assert!(master.unwrap_data_key(TenantId::new(), &wrapped).is_err());
        assert!(MasterKey::generate()
            .unwrap_data_key(tenant, &wrapped)
            .is_err());
    }

    #[test]
    fn master_key_base64_round_trip_and_validation() {
        let k = MasterKey::generate();
        let encoded = k.to_base64();
        let again = MasterKey::from_base64(&format!("{}\n", encoded.expose())).expect("decode");
        assert_eq!(again.to_base64().expose(), encoded.expose());
        assert_eq!(
            MasterKey::from_base64("c2hvcnQ=").err(),
            Some(CryptoError::InvalidKey)
        );
        assert_eq!(
            MasterKey::from_base64("not base64!").err(),
            Some(CryptoError::InvalidKey)
        );
        assert_eq!(format!("{k:?}"), "MasterKey(***)");
    }

    #[test]
    fn request_hashes_are_keyed_per_tenant_and_unambiguous() {
        let master = MasterKey::generate();
        let key = |tenant| {
            master
                .unwrap_data_key(tenant, &master.new_wrapped_data_key(tenant).expect("wrap"))
                .expect("unwrap")
        };
        let (a, b) = (key(TenantId::new()), key(TenantId::new()));
        let parts: [&[u8]; 2] = [b"POST", br#"{"number":"4242424242424242"}"#];
        assert_eq!(a.request_hash(&parts), a.request_hash(&parts));
        assert_ne!(a.request_hash(&parts), b.request_hash(&parts), "per tenant");
        let mut plain = Sha256::new();
        for part in parts {
            plain.update((part.len() as u64).to_be_bytes());
            plain.update(part);
        }
        let unkeyed: [u8; 32] = plain.finalize().into();
        assert_ne!(a.request_hash(&parts), unkeyed, "not guessable from a copy");
        assert_ne!(
            a.request_hash(&[b"ab", b"c"]),
            a.request_hash(&[b"a", b"bc"]),
            "length-prefixed"
        );
    }

    #[test]
    fn records_are_bound_to_purpose_and_id() {
        let master = MasterKey::generate();
        let tenant = TenantId::new();
        let key = master
            .unwrap_data_key(tenant, &master.new_wrapped_data_key(tenant).expect("wrap"))
            .expect("unwrap");
        let ct = key
            .seal_record(tenant, "proxy.configuration", b"id-1", b"{}")
            .expect("seal");
        assert!(key
            .open_record(tenant, "proxy.configuration", b"id-1", &ct)
            .is_ok());
        assert!(key
            .open_record(tenant, "proxy.configuration", b"id-2", &ct)
            .is_err());
        assert!(key.open_record(tenant, "other", b"id-1", &ct).is_err());
    }
}
