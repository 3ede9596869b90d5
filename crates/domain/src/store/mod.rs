//! Storage ports. The storage crate implements these for SQLite and PostgreSQL; an embedding
//! program may implement them for anything else.
//!
//! Every method but the credential lookups and the start-up and rotation reads of all tenants
//! ([`TenantStore::first_tenant`], [`TenantStore::list_tenants`]) takes the tenant id
//! and must confine itself to that tenant: that is what keeps tenants apart.
//!
//! One file per aggregate: tenants, applications, tokens, associations, proxies, idempotency
//! keys, console sessions and the database's health; the audit trail's port lives with the audit trail
//! (the `tessera-audit` crate's `AuditStore`).

mod applications;
mod associations;
mod console_sessions;
mod data_keys;
mod health;
mod idempotency;
mod proxies;
mod tenants;
mod tokens;
mod webhooks;

pub use crate::error::StoreError;
pub use crate::token::SearchHash;
pub use applications::{
    ApplicationFilter, ApplicationStore, KeyAdded, KeyedApplication, StoredApplication,
    StoredApplicationKey,
};
pub use associations::{AssociationStore, NewAssociation};
pub use console_sessions::{ConsoleSessionRecord, ConsoleSessionStore};
pub use data_keys::{DataKeyJob, DataKeyStore, SealedRow, SealedTable, StoredKeyVersion};
pub use health::HealthStore;
pub use idempotency::{IdempotencyRecord, IdempotencyScope, IdempotencyStore};
pub use proxies::{ProxyFilter, ProxyStore, SealedProxySecrets, StoredProxy, UnsealedProxy};
pub use tenants::{StoredTenant, TenantStore, RETIRED_FIRST_KEY};
pub use tokens::{
    ContainerScope, Duplicate, Position, StoredToken, TokenFilter, TokenInserts, TokenListing,
    TokenRecords, TokenSearch, TokenSearching, TokenStore, TokenUpdate, TokenUpkeep,
};
pub use webhooks::{StoredSigningKey, StoredWebhook, WebhookStore};

/// Declares [`Store`], everything the vault needs from storage, and implements it for every
/// type with all of `$part`: the list of store traits is written once.
macro_rules! store_of {
    ($($part:ident),+) => {
        /// Everything the vault needs from storage.
        pub trait Store: $($part +)+ {}

        impl<T> Store for T where T: $($part +)+ {}
    };
}

store_of!(
    TenantStore,
    ApplicationStore,
    TokenStore,
    AssociationStore,
    ProxyStore,
    IdempotencyStore,
    ConsoleSessionStore,
    DataKeyStore,
    WebhookStore,
    HealthStore
);
