//! SoftHSM tokens for the PKCS#11 tests: SoftHSM is a real PKCS#11 module (the same
//! interface a hardware HSM's library offers). Two tokens per test process, [`TOKEN`] and
//! [`TOKEN_B`], created in a temporary directory, each holding a non-extractable AES-256 key
//! labelled [`KEY`] and an extractable one labelled [`LEAKY_KEY`] (which the custody must
//! refuse).

use std::{path::PathBuf, sync::OnceLock};

use cryptoki::{
    context::{CInitializeArgs, CInitializeFlags, Pkcs11},
    mechanism::Mechanism,
    object::{Attribute, ObjectClass},
    session::UserType,
    types::AuthPin,
};

/// The token's label.
pub const TOKEN: &str = "tessera-test";
/// A second token's label, holding keys of the same labels (for moves from one HSM to
/// another).
pub const TOKEN_B: &str = "tessera-test-b";
/// The user PIN.
pub const PIN: &str = "1234";
/// The label of the non-extractable key.
pub const KEY: &str = "kek";
/// The label of an extractable key.
pub const LEAKY_KEY: &str = "leaky";

/// The process's token.
#[derive(Debug)]
pub struct SoftHsm {
    /// The PKCS#11 module.
    pub module: PathBuf,
    /// `SOFTHSM2_CONF` for child processes.
    pub conf: PathBuf,
    _dir: tempfile::TempDir,
}

/// SoftHSM's module, if installed. Under `CI=true` a missing module fails the test.
fn module() -> Option<PathBuf> {
    let found = [
        "/usr/lib/softhsm/libsofthsm2.so",
        "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
        "/usr/local/lib/softhsm/libsofthsm2.so",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file());
    if found.is_none() {
        if crate::db::postgres_required() {
            panic!("CI=true but SoftHSM is not installed (apt-get install softhsm2): the PKCS#11 tests must run");
        }
        eprintln!("skipped: SoftHSM is not installed (apt-get install softhsm2)");
    }
    found
}

/// The process's token, created on first use; `None` (the test skips) without SoftHSM.
pub fn token() -> Option<&'static SoftHsm> {
    static TOKEN_DIR: OnceLock<Option<SoftHsm>> = OnceLock::new();
    TOKEN_DIR
        .get_or_init(|| {
            let module = module()?;
            let dir = tempfile::tempdir().expect("token dir");
            let conf = dir.path().join("softhsm2.conf");
            std::fs::create_dir_all(dir.path().join("tokens")).expect("tokens dir");
            std::fs::write(
                &conf,
                format!(
                    "directories.tokendir = {}\nobjectstore.backend = file\n",
                    dir.path().join("tokens").display()
                ),
            )
            .expect("conf");
            // Read by the module when it is loaded; every PKCS#11 test of the process uses
            // this one token.
            std::env::set_var("SOFTHSM2_CONF", &conf);
            create(&module, TOKEN_B);
            create(&module, TOKEN);
            Some(SoftHsm {
                module,
                conf,
                _dir: dir,
            })
        })
        .as_ref()
}

/// Initialises a free slot's token as `label`, with its PINs and keys. Each call initialises
/// the module afresh (the free slot of a new token appears then); the last call leaves it
/// initialised for the process's custodies.
fn create(module: &PathBuf, label: &str) {
    let pkcs11 = Pkcs11::new(module).expect("module");
    pkcs11
        .initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .expect("initialize");
    let free = pkcs11
        .get_slots_with_token()
        .expect("slots")
        .into_iter()
        .find(|s| !pkcs11.get_token_info(*s).expect("info").token_initialized())
        .expect("a free slot");
    let so_pin = AuthPin::new("5678".to_string().into());
    pkcs11.init_token(free, &so_pin, label).expect("init token");
    let slot = pkcs11
        .get_slots_with_token()
        .expect("slots")
        .into_iter()
        .find(|s| pkcs11.get_token_info(*s).expect("info").label().trim_end() == label)
        .expect("the new token");
    let session = pkcs11.open_rw_session(slot).expect("session");
    session
        .login(UserType::So, Some(&so_pin))
        .expect("so login");
    let pin = AuthPin::new(PIN.to_string().into());
    session.init_pin(&pin).expect("user pin");
    session.logout().expect("logout");
    session
        .login(UserType::User, Some(&pin))
        .expect("user login");
    for (label, extractable) in [(KEY, false), (LEAKY_KEY, true)] {
        session
            .generate_key(
                &Mechanism::AesKeyGen,
                &[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::ValueLen(32.into()),
                    Attribute::Label(label.as_bytes().to_vec()),
                    Attribute::Token(true),
                    Attribute::Private(true),
                    Attribute::Sensitive(!extractable),
                    Attribute::Extractable(extractable),
                    Attribute::Encrypt(true),
                    Attribute::Decrypt(true),
                ],
            )
            .expect("generate key");
    }
    session.logout().expect("logout");
    drop(session);
    if label != TOKEN {
        pkcs11.finalize().expect("finalize");
    }
}
