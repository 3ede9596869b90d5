//! What names the KMS key and where KMS is.

/// The KMS key and, for tests and private endpoints, where KMS answers. Credentials and, unless
/// given here, the region come from the standard AWS chain (environment, profile, web identity,
/// container or instance role).
#[derive(Clone, Default)]
pub struct AwsKmsConfig {
    /// The key's id, ARN, alias (`alias/tessera`) or alias ARN.
    pub key_id: String,
    /// KMS's endpoint (`http://127.0.0.1:5000` for a test server, a VPC endpoint). Unset: the
    /// SDK's own resolution, which reads `AWS_ENDPOINT_URL_KMS` and then the region's endpoint.
    pub endpoint: Option<String>,
    /// The region. Unset: the chain's (`AWS_REGION`, the profile, the instance's).
    pub region: Option<String>,
}

/// Shows where KMS is, never the key's id: an ARN names the account, and logs need neither
/// (docs/operations.md, "AWS KMS").
impl std::fmt::Debug for AwsKmsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsKmsConfig")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_leaves_the_key_id_out() {
        let config = AwsKmsConfig {
            key_id: "arn:aws:kms:eu-west-1:123456789012:key/abcd".into(),
            endpoint: None,
            region: Some("eu-west-1".into()),
        };
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("123456789012") && shown.contains("eu-west-1"),
            "{shown}"
        );
    }
}
