//! Applications and the hashes of their keys, as stored.

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::{
    api_key::ApiKeyHash,
    application::{Application, ApplicationKey, ApplicationType},
    ids::{ApplicationId, ApplicationKeyId, TenantId},
    pagination::{Page, PageRequest},
};

/// One key of an application as stored: its metadata and the SHA-256 of the key.
#[derive(Debug, Clone)]
pub struct StoredApplicationKey {
    /// The tenant of its application.
    pub tenant_id: TenantId,
    /// Its metadata.
    pub key: ApplicationKey,
    /// SHA-256 of the key.
    pub key_hash: ApiKeyHash,
}

/// How adding a key to an application went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAdded {
    /// The key is stored.
    Added,
    /// The application already holds the most keys it may: nothing was stored.
    Full,
    /// There is no such application (deleted since it was read): nothing was stored.
    NoApplication,
}

/// An application to insert, with the key issued with it, if any.
#[derive(Debug, Clone)]
pub struct StoredApplication {
    /// The application (its `keys` are not read: `key` is its only one).
    pub application: Application,
    /// The key issued with it (`None`: created without a key).
    pub key: Option<StoredApplicationKey>,
}

/// The application a presented key belongs to, and that key.
#[derive(Debug, Clone)]
pub struct KeyedApplication {
    /// The application (without its `keys`).
    pub application: Application,
    /// The key that was found.
    pub key: StoredApplicationKey,
}

/// Which applications a list holds: each non-empty set restricts it (docs/api.md,
/// "Applications").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplicationFilter {
    /// Only these ids.
    pub ids: Vec<ApplicationId>,
    /// Only these types.
    pub types: Vec<ApplicationType>,
}

/// Applications and their keys' hashes.
#[async_trait]
pub trait ApplicationStore: Send + Sync {
    /// Inserts a new application with its first key, if any, at once.
    async fn insert_application(&self, app: &StoredApplication) -> Result<(), StoreError>;
    /// One application of `tenant` (without its `keys`).
    async fn get_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<Option<Application>, StoreError>;
    /// The application holding the key that hashes to `hash`, in whatever tenant.
    async fn find_application_by_key_hash(
        &self,
        hash: &ApiKeyHash,
    ) -> Result<Option<KeyedApplication>, StoreError>;
    /// A page of `tenant`'s applications that `filter` admits, oldest first (without their
    /// `keys`).
    async fn list_applications(
        &self,
        tenant: TenantId,
        filter: &ApplicationFilter,
        page: PageRequest,
    ) -> Result<Page<Application>, StoreError>;
    /// Replaces name, type, permissions, rules and `modified_*`; `false` when absent.
    async fn update_application(&self, app: &Application) -> Result<bool, StoreError>;
    /// Revokes every key of the application and stores `key` as its only one, with
    /// `modified_*`, at once; `false` when the application is absent.
    async fn replace_application_keys(
        &self,
        key: &StoredApplicationKey,
        modified_by: ApplicationId,
        modified_at: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Deletes, with its keys; `false` when absent.
    async fn delete_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<bool, StoreError>;
    /// Adds a key to an existing application that holds fewer than `max` keys. The count
    /// and the insert are one atomic step on every backend: concurrent additions never take
    /// an application past `max`.
    async fn insert_application_key(
        &self,
        key: &StoredApplicationKey,
        max: usize,
    ) -> Result<KeyAdded, StoreError>;
    /// The keys of `apps` in `tenant`, oldest first.
    async fn list_application_keys(
        &self,
        tenant: TenantId,
        apps: &[ApplicationId],
    ) -> Result<Vec<ApplicationKey>, StoreError>;
    /// Revokes one key of application `app`; `false` when it has no such key.
    async fn delete_application_key(
        &self,
        tenant: TenantId,
        app: ApplicationId,
        id: ApplicationKeyId,
    ) -> Result<bool, StoreError>;
}
