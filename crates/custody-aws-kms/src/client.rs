//! The SDK's configuration: the standard credential chain and region, an HTTPS client on
//! rustls with ring, bounded timeouts and standard retries.

use std::time::Duration;

use aws_config::{
    retry::RetryConfig, timeout::TimeoutConfig, BehaviorVersion, ConfigLoader, Region,
};
use aws_smithy_http_client::{
    tls::{self, rustls_provider::CryptoMode},
    Builder,
};

use crate::AwsKmsConfig;

/// How long a connection to KMS may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a call may take, its retries included.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(20);
/// Attempts per call: KMS's throttling and transient errors are retried with the SDK's
/// exponential backoff and jitter.
const ATTEMPTS: u32 = 3;

/// The SDK configuration loader for `config`: the standard chain for credentials (and for the
/// region unless `config` names one), the HTTP client, timeouts and retries. Callers that bring
/// their own credentials (tests, programs embedding the vault) set them on it before `load`.
pub fn config_loader(config: &AwsKmsConfig) -> ConfigLoader {
    let http = Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        .retry_config(RetryConfig::standard().with_max_attempts(ATTEMPTS))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .operation_attempt_timeout(ATTEMPT_TIMEOUT)
                .operation_timeout(OPERATION_TIMEOUT)
                .build(),
        );
    match &config.region {
        Some(region) => loader.region(Region::new(region.clone())),
        None => loader,
    }
}

/// The KMS client: the SDK configuration, with `config`'s endpoint when it names one (for KMS
/// alone: the credential chain's own calls, STS or SSO, keep theirs).
pub(crate) fn kms_client(
    sdk: &aws_config::SdkConfig,
    config: &AwsKmsConfig,
) -> aws_sdk_kms::Client {
    let mut builder = aws_sdk_kms::config::Builder::from(sdk);
    if let Some(endpoint) = &config.endpoint {
        builder = builder.endpoint_url(endpoint);
    }
    aws_sdk_kms::Client::from_conf(builder.build())
}
