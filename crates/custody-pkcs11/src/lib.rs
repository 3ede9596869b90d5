//! # tessera-custody-pkcs11
//!
//! The key-encrypting key in an HSM (docs/operations.md, "Where the master key lives"): a
//! non-extractable AES-256 key in a PKCS#11 token, found by the token's and the key's labels.
//! Wrapping and unwrapping are AES-GCM inside the token (`CKM_AES_GCM`, a fresh 12-byte IV
//! each time, 128-bit tag), bound to what the key is for by the additional data; the key never
//! leaves the token, and this process never holds it.
//!
//! A wrapping is `2 ‖ IV ‖ ciphertext ‖ tag`: the leading byte tells it from a file custody's
//! (`1`), so that both open during a move from one to the other.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use async_trait::async_trait;
use cryptoki::{
    context::{CInitializeArgs, CInitializeFlags, Pkcs11},
    error::{Error as CkError, RvError},
    mechanism::{aead::GcmParams, Mechanism},
    object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle},
    session::{Session, UserType},
    slot::Slot,
    types::AuthPin,
};
use rand::{rand_core::UnwrapErr, rngs::SysRng, Rng};
use tessera_domain::{
    crypto::CryptoError,
    custody::{KeyCustody, WrapPurpose},
    Secret,
};
use zeroize::Zeroizing;

/// The first byte of a PKCS#11 wrapping.
const VERSION: u8 = 2;
const IV_LEN: usize = 12;
const TAG_BITS: u64 = 128;

/// How long [`Pkcs11Custody::open`] keeps looking for the token by default: a token can be
/// briefly invisible while other processes open it (seen with SoftHSM under concurrent
/// starts), and a network HSM's slot may come up after the process.
pub const TOKEN_LOOKUP_TIME: Duration = Duration::from_secs(10);

/// Where the key is: the module, the token and key labels, and the user PIN.
#[derive(Debug)]
pub struct Pkcs11Config {
    /// The PKCS#11 module (`/usr/lib/softhsm/libsofthsm2.so`, a vendor's library).
    pub module: PathBuf,
    /// The token's label.
    pub token_label: String,
    /// The AES key's label (`CKA_LABEL`).
    pub key_label: String,
    /// The user PIN.
    pub pin: Secret<String>,
    /// How long to keep looking for the token before giving up ([`TOKEN_LOOKUP_TIME`]).
    pub lookup_time: Duration,
}

/// Why the token could not be used. Names what to fix; never holds the PIN.
#[derive(Debug, thiserror::Error)]
pub enum Pkcs11Error {
    /// The module could not be loaded or initialised.
    #[error("cannot load the PKCS#11 module {module}: {source}")]
    Module {
        /// The module's path.
        module: String,
        /// What the library said.
        source: CkError,
    },
    /// No slot holds a token with the label, however long it was looked for.
    #[error("no PKCS#11 token is labelled `{label}` (looked for it for {seconds:.1} s)")]
    NoToken {
        /// The label.
        label: String,
        /// How long it was looked for.
        seconds: f64,
    },
    /// The PIN was refused, or the session could not be opened.
    #[error("cannot log in to the PKCS#11 token `{token}`: {source}")]
    Login {
        /// The token's label.
        token: String,
        /// What the token said.
        source: CkError,
    },
    /// No single AES secret key has the label.
    #[error(
        "the PKCS#11 token holds {found} AES keys labelled `{label}`; it must hold exactly one"
    )]
    Key {
        /// The key label.
        label: String,
        /// How many were found.
        found: usize,
    },
    /// The key could be taken out of the token; a key-encrypting key must not be.
    #[error("the PKCS#11 key `{0}` is extractable or not sensitive: create it with CKA_EXTRACTABLE false and CKA_SENSITIVE true")]
    Extractable(String),
    /// Another token call failed.
    #[error("PKCS#11: {0}")]
    Token(CkError),
}

/// The custody: one logged-in session to the token, used by one call at a time (on a
/// blocking thread: a network HSM may take a while to answer). A session the token dropped
/// (the HSM restarted, the network failed) is opened again on the next call.
pub struct Pkcs11Custody {
    inner: Arc<Mutex<Inner>>,
    describe: String,
}

struct Inner {
    /// The logged-in session and the key's handle in it; `None` after the token dropped it.
    session: Option<(Session, ObjectHandle)>,
    slot: Slot,
    key_label: String,
    token_label: String,
    pin: Secret<String>,
    // Kept after the session so that it outlives it.
    context: Pkcs11,
}

impl std::fmt::Debug for Pkcs11Custody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe)
    }
}

impl Pkcs11Custody {
    /// Loads the module, logs in to the token and finds the key; refuses a key that can be
    /// extracted.
    pub fn open(config: &Pkcs11Config) -> Result<Self, Pkcs11Error> {
        let (context, slot) = find_slot(config)?;
        let mut inner = Inner {
            session: None,
            slot,
            key_label: config.key_label.clone(),
            token_label: config.token_label.clone(),
            pin: Secret::new(config.pin.expose().clone()),
            context,
        };
        inner.connect()?;
        Ok(Self {
            inner: Arc::new(Mutex::new(inner)),
            describe: format!(
                "pkcs11 token `{}` key `{}`",
                config.token_label, config.key_label
            ),
        })
    }

    /// Runs `f` on the session, opening one first if the token dropped the last; a call that
    /// fails because the session is gone is tried once more on a new one.
    async fn call<T: Send + 'static>(
        &self,
        f: impl Fn(&Session, ObjectHandle) -> Result<T, CkError> + Send + 'static,
        failed: fn(CkError) -> CryptoError,
    ) -> Result<T, CryptoError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = inner.lock().map_err(|_| {
                CryptoError::CustodyUnavailable("the PKCS#11 session lock is poisoned".into())
            })?;
            let mut last = None;
            for _ in 0..2 {
                let (session, key) = guard.session()?;
                match f(session, key) {
                    Err(e) if session_lost(&e) => {
                        guard.session = None;
                        last = Some(e);
                    }
                    other => return other.map_err(failed),
                }
            }
            Err(last.map_or_else(
                || CryptoError::CustodyUnavailable("PKCS#11: no session".into()),
                failed,
            ))
        })
        .await
        .map_err(|e| {
            CryptoError::CustodyUnavailable(format!("the PKCS#11 call did not finish: {e}"))
        })?
    }

    /// Drops the session as a token restart would, so the next call opens another.
    #[doc(hidden)]
    pub fn forget_session(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.session = None;
        }
    }
}

impl Inner {
    /// Opens a read-only session, logs in and finds the key.
    fn connect(&mut self) -> Result<(), Pkcs11Error> {
        let login = |source| Pkcs11Error::Login {
            token: self.token_label.clone(),
            source,
        };
        let session = self.context.open_ro_session(self.slot).map_err(login)?;
        let pin = AuthPin::new(self.pin.expose().clone().into());
        // A token's login is shared by the process's sessions.
        match session.login(UserType::User, Some(&pin)) {
            Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {}
            Err(source) => return Err(login(source)),
        }
        let key = find_key(&session, &self.key_label)?;
        self.session = Some((session, key));
        Ok(())
    }

    /// The session, opened again if needed.
    fn session(&mut self) -> Result<(&Session, ObjectHandle), CryptoError> {
        if self.session.is_none() {
            self.connect()
                .map_err(|e| CryptoError::CustodyUnavailable(e.to_string()))?;
        }
        match &self.session {
            Some((session, key)) => Ok((session, *key)),
            None => Err(CryptoError::CustodyUnavailable(
                "PKCS#11: no session".into(),
            )),
        }
    }
}

/// Whether a call failed because the session (or the token under it) is gone.
fn session_lost(e: &CkError) -> bool {
    matches!(
        e,
        CkError::Pkcs11(
            RvError::SessionClosed
                | RvError::SessionHandleInvalid
                | RvError::DeviceRemoved
                | RvError::TokenNotPresent
                | RvError::UserNotLoggedIn,
            _
        )
    )
}

/// The module loaded and initialised, and whether this call initialised it (another custody
/// of this process may have already).
fn load_module(config: &Pkcs11Config) -> Result<(Pkcs11, bool), Pkcs11Error> {
    let module = config.module.display().to_string();
    let context = Pkcs11::new(&config.module).map_err(|source| Pkcs11Error::Module {
        module: module.clone(),
        source,
    })?;
    match context.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) => Ok((context, true)),
        Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => Ok((context, false)),
        Err(source) => Err(Pkcs11Error::Module { module, source }),
    }
}

/// The slot whose token is labelled `label` in `context`, if any.
fn slot_labelled(context: &Pkcs11, label: &str) -> Result<Option<Slot>, CkError> {
    context.get_slots_with_token().map(|slots| {
        slots.into_iter().find(|slot| {
            context
                .get_token_info(*slot)
                .is_ok_and(|info| info.label().trim_end() == label)
        })
    })
}

/// The module and the slot whose token has the configured label, looked for again (50 ms,
/// doubling to 1 s apart) until the lookup time has passed. A module reads its tokens when
/// initialised (SoftHSM skips one another process holds locked at that moment), so each new
/// look finalises the module this call initialised and initialises it again. Only the lookup
/// is retried: a refused PIN never is (a token locks its PIN after a few).
fn find_slot(config: &Pkcs11Config) -> Result<(Pkcs11, Slot), Pkcs11Error> {
    let label = config.token_label.as_str();
    let started = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        let (context, initialised_here) = load_module(config)?;
        let found = slot_labelled(&context, label);
        if let Ok(Some(slot)) = found {
            return Ok((context, slot));
        }
        let waited = started.elapsed();
        if waited + pause > config.lookup_time {
            return match found {
                Err(e) => Err(Pkcs11Error::Token(e)),
                Ok(_) => Err(Pkcs11Error::NoToken {
                    label: label.to_string(),
                    seconds: waited.as_secs_f64(),
                }),
            };
        }
        tracing::warn!(
            token = label,
            "the PKCS#11 token is not visible yet; looking again"
        );
        if initialised_here {
            if let Err(e) = context.finalize() {
                tracing::debug!(error = %e, "finalising the PKCS#11 module before looking again");
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// The one AES secret key labelled `label`, checked to be unextractable and sensitive.
fn find_key(session: &Session, label: &str) -> Result<ObjectHandle, Pkcs11Error> {
    let found = session
        .find_objects(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Label(label.as_bytes().to_vec()),
        ])
        .map_err(Pkcs11Error::Token)?;
    let [key] = found[..] else {
        return Err(Pkcs11Error::Key {
            label: label.to_string(),
            found: found.len(),
        });
    };
    let attributes = session
        .get_attributes(key, &[AttributeType::Extractable, AttributeType::Sensitive])
        .map_err(Pkcs11Error::Token)?;
    let safe = attributes.iter().all(|a| match a {
        Attribute::Extractable(extractable) => !extractable,
        Attribute::Sensitive(sensitive) => *sensitive,
        _ => true,
    }) && attributes.len() == 2;
    if !safe {
        return Err(Pkcs11Error::Extractable(label.to_string()));
    }
    Ok(key)
}

/// What a failed token call means to the vault: a refused ciphertext, or a token that cannot
/// be used right now (503, retry). Tokens report a failed GCM tag check differently (SoftHSM
/// answers `CKR_GENERAL_ERROR`, others `CKR_ENCRYPTED_DATA_INVALID` or
/// `CKR_FUNCTION_FAILED`): a decryption's refusal is a refused ciphertext unless the token
/// says it is gone, not logged in or out of memory.
fn failure(e: CkError) -> CryptoError {
    match e {
        CkError::Pkcs11(
            RvError::DeviceError
            | RvError::DeviceMemory
            | RvError::DeviceRemoved
            | RvError::TokenNotPresent
            | RvError::TokenNotRecognized
            | RvError::SessionClosed
            | RvError::SessionHandleInvalid
            | RvError::UserNotLoggedIn
            | RvError::HostMemory
            | RvError::CryptokiNotInitialized,
            _,
        ) => CryptoError::CustodyUnavailable(format!("PKCS#11: {e}")),
        CkError::Pkcs11(..) => CryptoError::Authentication,
        other => CryptoError::CustodyUnavailable(format!("PKCS#11: {other}")),
    }
}

#[async_trait]
impl KeyCustody for Pkcs11Custody {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    async fn wrap(&self, purpose: WrapPurpose<'_>, plain: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let aad = purpose.aad();
        let plain = Zeroizing::new(plain.to_vec());
        let mut iv = [0u8; IV_LEN];
        UnwrapErr(SysRng).fill_bytes(&mut iv);
        let sealed = self
            .call(
                move |session, key| {
                    let mut params_iv = iv;
                    let params = GcmParams::new(&mut params_iv, &aad, TAG_BITS.into())?;
                    session.encrypt(&Mechanism::AesGcm(params), key, &plain)
                },
                |e| CryptoError::CustodyUnavailable(format!("PKCS#11: {e}")),
            )
            .await?;
        let mut out = Vec::with_capacity(1 + IV_LEN + sealed.len());
        out.push(VERSION);
        out.extend_from_slice(&iv);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    async fn unwrap(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let Some((&VERSION, rest)) = wrapped.split_first() else {
            // Another custody's wrapping (a file key's starts with 1): not this key's.
            return Err(CryptoError::Authentication);
        };
        if rest.len() <= IV_LEN {
            return Err(CryptoError::Malformed);
        }
        let (iv, sealed) = rest.split_at(IV_LEN);
        let (iv, sealed, aad) = (iv.to_vec(), sealed.to_vec(), purpose.aad());
        self.call(
            move |session, key| {
                let mut iv = iv.clone();
                let params = GcmParams::new(&mut iv, &aad, TAG_BITS.into())?;
                session
                    .decrypt(&Mechanism::AesGcm(params), key, &sealed)
                    .map(Zeroizing::new)
            },
            failure,
        )
        .await
    }
}
