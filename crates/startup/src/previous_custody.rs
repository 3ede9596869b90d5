//! The custody a move comes from (docs/operations.md, "Moving between custodies"): during
//! `rotate-master-key` from one HSM to another (or from an HSM back to a file key), the
//! previous key-encrypting key still opens the data keys not yet re-wrapped. A previous file key
//! is still named by `TESSERA_PREVIOUS_MASTER_KEY` or `--previous-master-key-file` alone; a
//! previous HSM key by `--previous-master-key-provider pkcs11` and the `--previous-pkcs11-*`
//! flags, a previous KMS key by `--previous-master-key-provider aws-kms` and the
//! `--previous-kms-*` flags; each mirrors the current custody's.

use std::{path::PathBuf, sync::Arc};

use clap::Args;
use tessera_domain::custody::KeyCustody;

use crate::{
    custody::{aws_kms, pkcs11, KmsFlags, MasterKeyProvider, Pkcs11Flags},
    error::StartupError,
};

/// Environment variable holding the previous token's user PIN.
pub const PREVIOUS_PIN_ENV: &str = "TESSERA_PREVIOUS_PKCS11_PIN";

/// The previous custody's flags; each also reads `TESSERA_<FLAG>`.
#[derive(Clone, Default, Args)]
pub struct PreviousCustodyArgs {
    /// During a move between custodies: where the previous key-encrypting key lives, `file`
    /// (`TESSERA_PREVIOUS_MASTER_KEY` or `--previous-master-key-file`), `pkcs11` (the
    /// `--previous-pkcs11-*` flags) or `aws-kms` (the `--previous-kms-*` flags). Unset: a
    /// previous file key if one is given, else none.
    #[arg(long, env = "TESSERA_PREVIOUS_MASTER_KEY_PROVIDER", value_enum)]
    pub previous_master_key_provider: Option<MasterKeyProvider>,
    /// Previous `pkcs11`: the PKCS#11 module.
    #[arg(long, env = "TESSERA_PREVIOUS_PKCS11_MODULE")]
    pub previous_pkcs11_module: Option<PathBuf>,
    /// Previous `pkcs11`: the token's label.
    #[arg(long, env = "TESSERA_PREVIOUS_PKCS11_TOKEN_LABEL")]
    pub previous_pkcs11_token_label: Option<String>,
    /// Previous `pkcs11`: the AES key's label.
    #[arg(
        long,
        env = "TESSERA_PREVIOUS_PKCS11_KEY_LABEL",
        default_value = "tessera-kek"
    )]
    pub previous_pkcs11_key_label: String,
    /// Previous `pkcs11`: a file holding the user PIN (`TESSERA_PREVIOUS_PKCS11_PIN`, the PIN
    /// itself, takes precedence).
    #[arg(long, env = "TESSERA_PREVIOUS_PKCS11_PIN_FILE")]
    pub previous_pkcs11_pin_file: Option<PathBuf>,
    /// Previous `aws-kms`: the KMS key's id, ARN or alias.
    #[arg(long, env = "TESSERA_PREVIOUS_KMS_KEY_ID")]
    pub previous_kms_key_id: Option<String>,
    /// Previous `aws-kms`: KMS's endpoint (unset: `AWS_ENDPOINT_URL_KMS`, else the region's).
    #[arg(long, env = "TESSERA_PREVIOUS_KMS_ENDPOINT")]
    pub previous_kms_endpoint: Option<String>,
    /// Previous `aws-kms`: the region, over the chain's.
    #[arg(long, env = "TESSERA_PREVIOUS_KMS_REGION")]
    pub previous_kms_region: Option<String>,
}

/// As [`crate::custody::CustodyArgs`]'s: never the KMS key's id.
impl std::fmt::Debug for PreviousCustodyArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreviousCustodyArgs")
            .field("provider", &self.previous_master_key_provider)
            .field("pkcs11_module", &self.previous_pkcs11_module)
            .field("pkcs11_token_label", &self.previous_pkcs11_token_label)
            .field(
                "kms_key_id",
                &self.previous_kms_key_id.as_ref().map(|_| "<set>"),
            )
            .field("kms_endpoint", &self.previous_kms_endpoint)
            .finish_non_exhaustive()
    }
}

/// The previous custody the flags name, if any. `file_given`: a previous file key was given.
pub(crate) async fn load(
    args: &PreviousCustodyArgs,
    file_given: bool,
) -> Result<Option<Arc<dyn KeyCustody>>, StartupError> {
    match args.previous_master_key_provider {
        None => Ok(None),
        Some(MasterKeyProvider::File) if file_given => Ok(None),
        Some(MasterKeyProvider::File) => Err(StartupError::MasterKey(
            "--previous-master-key-provider file needs TESSERA_PREVIOUS_MASTER_KEY or \
             --previous-master-key-file"
                .into(),
        )),
        Some(MasterKeyProvider::Pkcs11) => {
            let custody = pkcs11(Pkcs11Flags {
                prefix: "previous-",
                module: args.previous_pkcs11_module.as_ref(),
                token_label: args.previous_pkcs11_token_label.as_ref(),
                key_label: &args.previous_pkcs11_key_label,
                pin_file: args.previous_pkcs11_pin_file.as_ref(),
                pin_env: PREVIOUS_PIN_ENV,
            })?;
            Ok(Some(Arc::new(custody)))
        }
        Some(MasterKeyProvider::AwsKms) => {
            let custody = aws_kms(KmsFlags {
                prefix: "previous-",
                key_id: args.previous_kms_key_id.as_deref(),
                endpoint: args.previous_kms_endpoint.as_deref(),
                region: args.previous_kms_region.as_deref(),
            })
            .await?;
            Ok(Some(Arc::new(custody)))
        }
    }
}
