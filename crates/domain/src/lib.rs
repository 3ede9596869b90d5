//! # tessera-domain
//!
//! The vault's core: what a tenant, an application, a token and a permission *are*, the rules they
//! obey, the cryptography that protects token data at rest, and the use-cases that tie them
//! together. Storage sits behind the traits in [`store`]; nothing here knows about HTTP or SQL, so
//! another Rust program can embed the vault by handing [`Vault`] any [`store::Store`].
//!
//! ```text
//!   caller ──► Vault (use-cases) ──► access (permissions) ──► store traits ──► storage crate
//!                     │
//!                     └──► crypto (envelope encryption of token data)
//! ```

pub mod access;
pub mod api_key;
pub mod application;
pub mod audit;
pub mod binding;
pub mod cache;
pub mod checksum;
pub mod container;
pub mod crypto;
mod crypto_error;
pub mod cursor;
pub mod custody;
pub mod data_transform;
pub mod error;
pub mod hex;
pub mod ids;
pub mod lookup;
pub mod metadata;
pub mod network;
pub mod origin;
pub mod pagination;
pub mod permission;
pub mod proxy;
pub mod search;
pub mod secret;
pub mod store;
pub mod tenant;
pub mod timestamp;
pub mod token;
pub mod transform_check;
pub mod validation;
pub mod vault;
pub mod webhook;

pub use access::{GrantCheck, Principal};
pub use api_key::{ApiKey, ApiKeyHash};
pub use application::{Application, ApplicationInput, ApplicationType, ApplicationUpdate, Rule};
pub use container::Container;
pub use crypto::MasterKey;
pub use data_transform::DataTransform;
pub use error::VaultError;
pub use ids::{ApplicationId, ApplicationKeyId, ProxyId, TenantId, TokenId, WebhookId};
pub use pagination::{Page, PageRequest};
pub use permission::Permission;
pub use proxy::{Proxy, ProxyInput, ProxyPatch};
pub use secret::Secret;
pub use tenant::Tenant;
pub use token::{NewToken, Token, TokenPatch, TokenType};
pub use transform_check::TransformCheck;
pub use validation::ValidationErrors;
pub use vault::{DataKeyStatus, JobSettings, Rotation, Vault};
