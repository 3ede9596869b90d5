//! Where the key-encrypting key lives (`--master-key-provider`, docs/operations.md, "Where
//! the master key lives"): a key in a file or the environment (the default), a
//! non-extractable key in an HSM over PKCS#11, or a key in AWS KMS.

use std::{path::PathBuf, sync::Arc};

use clap::{Args, ValueEnum};
use tessera_custody_aws_kms::{AwsKmsConfig, AwsKmsCustody};
use tessera_custody_pkcs11::{Pkcs11Config, Pkcs11Custody};
use tessera_domain::{custody::KeyCustody, Secret};
use tessera_storage::DatabaseUrl;
use zeroize::Zeroizing;

use crate::{
    error::StartupError,
    master_key::{self, KeyFiles},
};

/// Environment variable holding the PKCS#11 user PIN.
pub const PIN_ENV: &str = "TESSERA_PKCS11_PIN";

/// Which custody holds the key-encrypting key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum MasterKeyProvider {
    /// A base64 key from `TESSERA_MASTER_KEY` or `--master-key-file` (on SQLite, generated
    /// beside the database on first start).
    #[default]
    File,
    /// A non-extractable AES key in a PKCS#11 token (an HSM); wrapping runs in the token.
    Pkcs11,
    /// A symmetric key in AWS KMS; wrapping is KMS `Encrypt` and `Decrypt`.
    AwsKms,
}

/// The custody flags; each also reads `TESSERA_<FLAG>`.
#[derive(Clone, Default, Args)]
pub struct CustodyArgs {
    /// Where the key-encrypting key lives: `file`, `pkcs11` or `aws-kms`.
    #[arg(long, env = "TESSERA_MASTER_KEY_PROVIDER", value_enum, default_value_t)]
    pub master_key_provider: MasterKeyProvider,
    /// `pkcs11`: the PKCS#11 module (the HSM vendor's library, or SoftHSM's).
    #[arg(long, env = "TESSERA_PKCS11_MODULE")]
    pub pkcs11_module: Option<PathBuf>,
    /// `pkcs11`: the token's label.
    #[arg(long, env = "TESSERA_PKCS11_TOKEN_LABEL")]
    pub pkcs11_token_label: Option<String>,
    /// `pkcs11`: the label of the AES key in the token (non-extractable, sensitive).
    #[arg(long, env = "TESSERA_PKCS11_KEY_LABEL", default_value = "tessera-kek")]
    pub pkcs11_key_label: String,
    /// `pkcs11`: a file holding the user PIN (`TESSERA_PKCS11_PIN`, the PIN itself, takes
    /// precedence).
    #[arg(long, env = "TESSERA_PKCS11_PIN_FILE")]
    pub pkcs11_pin_file: Option<PathBuf>,
    /// `aws-kms`: the KMS key's id, ARN, alias (`alias/tessera`) or alias ARN. Credentials and
    /// region come from the standard AWS chain.
    #[arg(long, env = "TESSERA_KMS_KEY_ID")]
    pub kms_key_id: Option<String>,
    /// `aws-kms`: KMS's endpoint (a VPC endpoint, a test server). Unset: `AWS_ENDPOINT_URL_KMS`,
    /// else the region's.
    #[arg(long, env = "TESSERA_KMS_ENDPOINT")]
    pub kms_endpoint: Option<String>,
    /// `aws-kms`: the region, over the chain's (`AWS_REGION`, the profile's).
    #[arg(long, env = "TESSERA_KMS_REGION")]
    pub kms_region: Option<String>,
    /// The custody a move comes from (`rotate-master-key` between custodies).
    #[command(flatten)]
    pub previous: crate::previous_custody::PreviousCustodyArgs,
}

/// Names the provider and where it is, never the KMS key's id (an ARN names the account;
/// docs/operations.md, "AWS KMS").
impl std::fmt::Debug for CustodyArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustodyArgs")
            .field("master_key_provider", &self.master_key_provider)
            .field("pkcs11_module", &self.pkcs11_module)
            .field("pkcs11_token_label", &self.pkcs11_token_label)
            .field("pkcs11_key_label", &self.pkcs11_key_label)
            .field("kms_key_id", &self.kms_key_id.as_ref().map(|_| "<set>"))
            .field("kms_endpoint", &self.kms_endpoint)
            .field("kms_region", &self.kms_region)
            .field("previous", &self.previous)
            .finish_non_exhaustive()
    }
}

impl CustodyArgs {
    /// The current custody's PKCS#11 flags.
    fn pkcs11_flags(&self) -> Pkcs11Flags<'_> {
        Pkcs11Flags {
            prefix: "",
            module: self.pkcs11_module.as_ref(),
            token_label: self.pkcs11_token_label.as_ref(),
            key_label: &self.pkcs11_key_label,
            pin_file: self.pkcs11_pin_file.as_ref(),
            pin_env: PIN_ENV,
        }
    }

    /// The current custody's KMS flags.
    fn kms_flags(&self) -> KmsFlags<'_> {
        KmsFlags {
            prefix: "",
            key_id: self.kms_key_id.as_deref(),
            endpoint: self.kms_endpoint.as_deref(),
            region: self.kms_region.as_deref(),
        }
    }
}

/// One custody's KMS flags, current (`--kms-*`) or previous (`--previous-kms-*`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KmsFlags<'a> {
    /// `""` or `"previous-"`: how the flags are named in errors.
    pub(crate) prefix: &'static str,
    pub(crate) key_id: Option<&'a str>,
    pub(crate) endpoint: Option<&'a str>,
    pub(crate) region: Option<&'a str>,
}

/// One custody's PKCS#11 flags, current (`--pkcs11-*`) or previous (`--previous-pkcs11-*`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pkcs11Flags<'a> {
    /// `""` or `"previous-"`: how the flags are named in errors.
    pub(crate) prefix: &'static str,
    pub(crate) module: Option<&'a PathBuf>,
    pub(crate) token_label: Option<&'a String>,
    pub(crate) key_label: &'a str,
    pub(crate) pin_file: Option<&'a PathBuf>,
    /// The variable holding the PIN itself.
    pub(crate) pin_env: &'static str,
}

fn custody_error(message: String) -> StartupError {
    StartupError::MasterKey(message)
}

/// The custodies of one process.
#[derive(Debug)]
pub struct Custodies {
    /// Wraps from now on.
    pub current: Arc<dyn KeyCustody>,
    /// Still open keys not yet re-wrapped (a move or rotation under way).
    pub previous: Vec<Arc<dyn KeyCustody>>,
    /// A file key generated for a new SQLite deployment, to be written only if the database
    /// holds nothing yet.
    pub new_key_file: Option<master_key::NewKeyFile>,
}

/// The configured custody, and the previous custodies of a move or rotation under way.
pub async fn load(
    files: KeyFiles<'_>,
    custody: &CustodyArgs,
    url: &DatabaseUrl,
) -> Result<Custodies, StartupError> {
    let mut previous: Vec<Arc<dyn KeyCustody>> = master_key::load_previous(files)?
        .into_iter()
        .map(|k| Arc::new(k) as Arc<dyn KeyCustody>)
        .collect();
    previous.extend(crate::previous_custody::load(&custody.previous, !previous.is_empty()).await?);
    let (current, new_key_file): (Arc<dyn KeyCustody>, _) = match custody.master_key_provider {
        MasterKeyProvider::File => {
            let (key, new_key_file) = master_key::load(files, url)?;
            (Arc::new(key), new_key_file)
        }
        MasterKeyProvider::Pkcs11 => (Arc::new(pkcs11(custody.pkcs11_flags())?), None),
        MasterKeyProvider::AwsKms => (Arc::new(aws_kms(custody.kms_flags()).await?), None),
    };
    Ok(Custodies {
        current,
        previous,
        new_key_file,
    })
}

/// The PKCS#11 custody `flags` name.
pub(crate) fn pkcs11(flags: Pkcs11Flags<'_>) -> Result<Pkcs11Custody, StartupError> {
    let prefix = flags.prefix;
    let required = |flag: &str| {
        custody_error(format!(
            "--{prefix}master-key-provider pkcs11 needs --{prefix}{flag} (or TESSERA_{})",
            format!("{prefix}{flag}").to_uppercase().replace('-', "_")
        ))
    };
    let module = flags
        .module
        .cloned()
        .ok_or_else(|| required("pkcs11-module"))?;
    let token_label = flags
        .token_label
        .cloned()
        .ok_or_else(|| required("pkcs11-token-label"))?;
    let pin = pin(flags)?;
    let config = Pkcs11Config {
        module,
        token_label,
        key_label: flags.key_label.to_string(),
        pin,
        lookup_time: tessera_custody_pkcs11::TOKEN_LOOKUP_TIME,
    };
    Pkcs11Custody::open(&config).map_err(|e| {
        let which = if prefix.is_empty() {
            "the"
        } else {
            "the previous"
        };
        custody_error(format!("{which} HSM cannot be used: {e}"))
    })
}

fn pin(flags: Pkcs11Flags<'_>) -> Result<Secret<String>, StartupError> {
    if let Ok(pin) = std::env::var(flags.pin_env) {
        return Ok(Secret::new(pin));
    }
    let prefix = flags.prefix;
    let path = flags.pin_file.ok_or_else(|| {
        custody_error(format!(
            "--{prefix}master-key-provider pkcs11 needs the user PIN: {} or --{prefix}pkcs11-pin-file",
            flags.pin_env
        ))
    })?;
    let raw = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
        custody_error(format!(
            "reading the PKCS#11 PIN file {}: {e}",
            path.display()
        ))
    })?);
    Ok(Secret::new(raw.trim_end_matches(['\n', '\r']).to_string()))
}

/// The KMS custody `flags` name, checked to answer and to hold a usable key.
pub(crate) async fn aws_kms(flags: KmsFlags<'_>) -> Result<AwsKmsCustody, StartupError> {
    let prefix = flags.prefix;
    let key_id = flags.key_id.filter(|k| !k.trim().is_empty()).ok_or_else(|| {
        custody_error(format!(
            "--{prefix}master-key-provider aws-kms needs --{prefix}kms-key-id (or TESSERA_{}KMS_KEY_ID)",
            prefix.to_uppercase().replace('-', "_")
        ))
    })?;
    let config = AwsKmsConfig {
        key_id: key_id.to_string(),
        endpoint: flags.endpoint.map(str::to_string),
        region: flags.region.map(str::to_string),
    };
    AwsKmsCustody::open(&config).await.map_err(|e| {
        let which = if prefix.is_empty() {
            "the"
        } else {
            "the previous"
        };
        custody_error(format!("{which} KMS key cannot be used: {e}"))
    })
}
