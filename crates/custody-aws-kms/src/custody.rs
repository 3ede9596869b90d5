//! The custody: KMS `Encrypt` and `Decrypt` with the key's id and the purpose's
//! `EncryptionContext`.

use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_kms::{
    primitives::Blob,
    types::{KeyMetadata, KeySpec, KeyState, KeyUsageType},
    Client,
};
use tessera_domain::{
    crypto::CryptoError,
    custody::{KeyCustody, WrapPurpose},
};
use tokio::sync::Semaphore;
use zeroize::Zeroizing;

use crate::{
    client::{config_loader, kms_client},
    failure::Failure,
    AwsKmsConfig, AwsKmsError,
};

/// The first byte of a KMS wrapping: `3 ‖ n ‖ the key's id (n bytes) ‖ CiphertextBlob`. The
/// id tells which key a wrapping needs without asking KMS (a move between two KMS keys tries
/// the current key on every wrapping; AWS and emulators answer a wrong key differently).
const VERSION: u8 = 3;

/// KMS calls one process makes at once, at most. The vault calls a custody only when a process
/// first needs a key, so this bounds the burst at start-up (one unwrap per tenant) well under
/// KMS's request quotas; the SDK retries throttling with backoff.
pub const MAX_IN_FLIGHT: usize = 16;

/// The KMS custody.
pub struct AwsKmsCustody {
    client: Client,
    /// The key's ARN, as `DescribeKey` answered for the configured id, ARN or alias: what
    /// `Encrypt` and `Decrypt` name, so that an alias moved to another key while this process
    /// runs does not move its wrappings with it.
    arn: String,
    /// The key's id, as `DescribeKey` answered (a UUID, or `mrk-…` for a multi-Region key,
    /// the same in each of its Regions): written into each wrapping, and checked against the
    /// key that answered each `Decrypt`.
    canonical_id: String,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for AwsKmsCustody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("aws-kms")
    }
}

impl AwsKmsCustody {
    /// Loads the standard chain's credentials and region, and checks with `DescribeKey` that
    /// KMS answers and that the key is an enabled symmetric encryption key.
    pub async fn open(config: &AwsKmsConfig) -> Result<Self, AwsKmsError> {
        let sdk = config_loader(config).load().await;
        Self::from_sdk_config(&sdk, config).await
    }

    /// As [`AwsKmsCustody::open`], on an SDK configuration the caller loaded (built from
    /// [`config_loader`], with its own credentials).
    pub async fn from_sdk_config(
        sdk: &SdkConfig,
        config: &AwsKmsConfig,
    ) -> Result<Self, AwsKmsError> {
        if config.key_id.trim().is_empty() {
            return Err(AwsKmsError::NoKey);
        }
        if sdk.region().is_none() {
            return Err(AwsKmsError::NoRegion);
        }
        let client = kms_client(sdk, config);
        let described = client
            .describe_key()
            .key_id(&config.key_id)
            .send()
            .await
            .map_err(|e| Failure::of(&e).at_start("DescribeKey"))?;
        let (arn, canonical_id) = usable(described.key_metadata())?;
        Ok(Self {
            client,
            arn,
            canonical_id,
            permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        })
    }

    /// Whether KMS's answer names this key (it answers with the ARN of the key that acted;
    /// a multi-Region key's replica has another ARN and the same id).
    fn answered_by_this_key(&self, answered: Option<&str>) -> bool {
        answered.and_then(|arn| arn.rsplit('/').next()) == Some(self.canonical_id.as_str())
    }

    async fn permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>, CryptoError> {
        self.permits
            .acquire()
            .await
            .map_err(|_| CryptoError::CustodyUnavailable("AWS KMS: the custody is closed".into()))
    }
}

/// The key's ARN and id when it can wrap keys: enabled, symmetric, for encryption.
fn usable(metadata: Option<&KeyMetadata>) -> Result<(String, String), AwsKmsError> {
    let Some(metadata) = metadata else {
        return Err(AwsKmsError::Unusable {
            found: "not described".into(),
        });
    };
    let (state, spec, usage) = (
        metadata.key_state(),
        metadata.key_spec(),
        metadata.key_usage(),
    );
    // A SYMMETRIC_DEFAULT key is always for ENCRYPT_DECRYPT; some KMS emulators leave the
    // usage out.
    let fits = state == Some(&KeyState::Enabled)
        && spec == Some(&KeySpec::SymmetricDefault)
        && usage.is_none_or(|u| *u == KeyUsageType::EncryptDecrypt);
    let id = metadata.key_id();
    match (u8::try_from(id.len()), metadata.arn()) {
        (Ok(1..), Some(arn)) if fits => Ok((arn.to_string(), id.to_string())),
        _ => Err(AwsKmsError::Unusable {
            found: format!(
                "{}, {}, {}",
                state.map_or("of no state", KeyState::as_str),
                spec.map_or("of no spec", KeySpec::as_str),
                usage.map_or("of no usage", KeyUsageType::as_str)
            ),
        }),
    }
}

/// The purpose as an `EncryptionContext`.
fn context(purpose: WrapPurpose<'_>) -> HashMap<String, String> {
    purpose
        .context()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

#[async_trait]
impl KeyCustody for AwsKmsCustody {
    fn describe(&self) -> String {
        "aws-kms".into()
    }

    async fn wrap(&self, purpose: WrapPurpose<'_>, plain: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let _permit = self.permit().await?;
        let answer = self
            .client
            .encrypt()
            .key_id(&self.arn)
            .plaintext(Blob::new(plain.to_vec()))
            .set_encryption_context(Some(context(purpose)))
            .send()
            .await
            .map_err(|e| Failure::of(&e).unavailable("Encrypt"))?;
        if !self.answered_by_this_key(answer.key_id.as_deref()) {
            return Err(CryptoError::CustodyUnavailable(
                "AWS KMS Encrypt: answered by another key than the configured one".into(),
            ));
        }
        let blob = answer.ciphertext_blob.ok_or_else(|| {
            CryptoError::CustodyUnavailable("AWS KMS Encrypt: no ciphertext in the answer".into())
        })?;
        let id = self.canonical_id.as_bytes();
        let mut out = Vec::with_capacity(2 + id.len() + blob.as_ref().len());
        out.push(VERSION);
        // At most 255 bytes: checked when the key was described.
        out.push(id.len() as u8);
        out.extend_from_slice(id);
        out.extend_from_slice(blob.as_ref());
        Ok(out)
    }

    async fn unwrap(
        &self,
        purpose: WrapPurpose<'_>,
        wrapped: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let Some((&VERSION, rest)) = wrapped.split_first() else {
            // Another custody's wrapping: not this key's.
            return Err(CryptoError::Authentication);
        };
        let Some((&len, rest)) = rest.split_first() else {
            return Err(CryptoError::Malformed);
        };
        let (id, blob) = rest
            .split_at_checked(usize::from(len))
            .filter(|(_, blob)| !blob.is_empty())
            .ok_or(CryptoError::Malformed)?;
        if id != self.canonical_id.as_bytes() {
            // Another KMS key's wrapping.
            return Err(CryptoError::Authentication);
        }
        let _permit = self.permit().await?;
        let answer = self
            .client
            .decrypt()
            .key_id(&self.arn)
            .ciphertext_blob(Blob::new(blob.to_vec()))
            .set_encryption_context(Some(context(purpose)))
            .send()
            .await
            .map_err(|e| Failure::of(&e).unwrap_error())?;
        let plain = answer
            .plaintext
            .map(|p| Zeroizing::new(p.into_inner()))
            .ok_or_else(|| {
                CryptoError::CustodyUnavailable(
                    "AWS KMS Decrypt: no plaintext in the answer".into(),
                )
            })?;
        // Opened by any other key than the configured one: refused.
        if !self.answered_by_this_key(answer.key_id.as_deref()) {
            return Err(CryptoError::Authentication);
        }
        Ok(plain)
    }
}
