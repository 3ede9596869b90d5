//! # tessera-custody-aws-kms
//!
//! The key-encrypting key in AWS KMS (docs/operations.md, "Where the master key lives"): a
//! symmetric KMS key, named by `--kms-key-id`, that never leaves KMS. Wrapping a data key is KMS
//! `Encrypt`, unwrapping it `Decrypt`, each with the key's id and an `EncryptionContext` naming
//! the tenant and the purpose, so KMS opens a wrapped key only for what it was wrapped for.
//!
//! A wrapping is `3 ‖ n ‖ key id ‖ CiphertextBlob`: the leading byte tells it from a file
//! custody's (`1`) or an HSM's (`2`), and the key id one KMS key's from another's, so that every
//! custody's wrappings open during a move from one to another.
//!
//! The client is the official AWS SDK on rustls with ring (the TLS stack the workspace already
//! builds), with the standard credential chain and region, bounded timeouts and the SDK's
//! standard retries (throttling included).

mod client;
mod config;
mod custody;
mod failure;

pub use client::config_loader;
pub use config::AwsKmsConfig;
pub use custody::{AwsKmsCustody, MAX_IN_FLIGHT};
pub use failure::AwsKmsError;
