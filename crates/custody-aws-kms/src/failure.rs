//! What KMS's answers mean to the vault. Errors name the operation and KMS's error code, or
//! the transport's failure; never the key's id, KMS's message (which may quote the key's ARN)
//! or a credential.

use aws_sdk_kms::error::{ProvideErrorMetadata, SdkError};
use tessera_domain::crypto::CryptoError;

/// Why the KMS key cannot be used at start-up.
#[derive(Debug, thiserror::Error)]
pub enum AwsKmsError {
    /// No region in the flags or the credential chain.
    #[error("no AWS region: set AWS_REGION (or the profile's region), or --kms-region")]
    NoRegion,
    /// `--kms-key-id` is empty.
    #[error("no KMS key: set --kms-key-id (or TESSERA_KMS_KEY_ID)")]
    NoKey,
    /// KMS could not be reached, or did not answer in time.
    #[error("cannot reach AWS KMS: {0}")]
    Unreachable(String),
    /// KMS answered with an error (`AccessDeniedException`, `NotFoundException`, …).
    #[error("AWS KMS refused {operation}: {code}")]
    Refused {
        /// The operation (`DescribeKey`).
        operation: &'static str,
        /// KMS's error code.
        code: String,
    },
    /// The key exists but cannot wrap keys.
    #[error("the KMS key cannot wrap keys: it is {found}; it must be an enabled SYMMETRIC_DEFAULT key for ENCRYPT_DECRYPT")]
    Unusable {
        /// Its state, spec and usage.
        found: String,
    },
}

/// How a failed KMS call ended.
pub(crate) enum Failure {
    /// KMS answered: the error's code.
    Service(String),
    /// No answer: the transport's account of it.
    Transport(String),
}

impl Failure {
    /// Classifies the SDK's error.
    pub(crate) fn of<E, R>(err: &SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + 'static,
    {
        match err {
            SdkError::ServiceError(service) => Failure::Service(
                service
                    .err()
                    .code()
                    .unwrap_or("an error without a code")
                    .to_string(),
            ),
            other => Failure::Transport(chain(other)),
        }
    }

    /// The vault's view of a failed `Decrypt`: a ciphertext KMS will not open for this key
    /// and context is refused (another custody may open it); anything else means KMS cannot be
    /// used right now (503, retry).
    pub(crate) fn unwrap_error(self) -> CryptoError {
        match self {
            Failure::Service(code)
                if matches!(
                    code.as_str(),
                    "InvalidCiphertextException" | "IncorrectKeyException"
                ) =>
            {
                CryptoError::Authentication
            }
            other => other.unavailable("Decrypt"),
        }
    }

    /// KMS cannot be used right now for `operation`.
    pub(crate) fn unavailable(self, operation: &str) -> CryptoError {
        CryptoError::CustodyUnavailable(match self {
            Failure::Service(code) => format!("AWS KMS {operation}: {code}"),
            Failure::Transport(detail) => format!("AWS KMS {operation}: {detail}"),
        })
    }

    /// A start-up error for `operation`.
    pub(crate) fn at_start(self, operation: &'static str) -> AwsKmsError {
        match self {
            Failure::Service(code) => AwsKmsError::Refused { operation, code },
            Failure::Transport(detail) => AwsKmsError::Unreachable(detail),
        }
    }
}

/// `err` and its sources, each once: `dispatch failure: io error: … Connection refused`.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(next) = source {
        let shown = next.to_string();
        if !text.ends_with(&shown) {
            text.push_str(": ");
            text.push_str(&shown);
        }
        source = next.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refused_ciphertext_is_an_authentication_failure() {
        for code in ["InvalidCiphertextException", "IncorrectKeyException"] {
            assert!(matches!(
                Failure::Service(code.into()).unwrap_error(),
                CryptoError::Authentication
            ));
        }
        for code in [
            "AccessDeniedException",
            "ThrottlingException",
            "KMSInvalidStateException",
            "DisabledException",
            "KeyUnavailableException",
        ] {
            assert!(matches!(
                Failure::Service(code.into()).unwrap_error(),
                CryptoError::CustodyUnavailable(m) if m.contains(code)
            ));
        }
        assert!(matches!(
            Failure::Transport("io error".into()).unwrap_error(),
            CryptoError::CustodyUnavailable(_)
        ));
    }
}
