//! Applications and their key hashes, as stored.

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::{
    api_key::ApiKeyHash,
    application::Application,
    ids::{ApplicationId, TenantId},
    pagination::{Page, PageRequest},
};

/// An application as stored: with the hash of its current key.
#[derive(Debug, Clone)]
pub struct StoredApplication {
    /// The application.
    pub application: Application,
    /// SHA-256 of its API key.
    pub key_hash: ApiKeyHash,
}

/// Applications and their key hashes.
#[async_trait]
pub trait ApplicationStore: Send + Sync {
    /// Inserts a new application.
    async fn insert_application(&self, app: &StoredApplication) -> Result<(), StoreError>;
    /// One application of `tenant`.
    async fn get_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<Option<Application>, StoreError>;
    /// The application whose key hashes to `hash`, in whatever tenant.
    async fn find_application_by_key_hash(
        &self,
        hash: &ApiKeyHash,
    ) -> Result<Option<StoredApplication>, StoreError>;
    /// A page of `tenant`'s applications, oldest first.
    async fn list_applications(
        &self,
        tenant: TenantId,
        page: PageRequest,
    ) -> Result<Page<Application>, StoreError>;
    /// Replaces name, type, permissions, rules and `modified_*`; `false` when absent.
    async fn update_application(&self, app: &Application) -> Result<bool, StoreError>;
    /// Replaces the key hash and `modified_*`; `false` when absent.
    async fn replace_application_key(
        &self,
        tenant: TenantId,
        id: ApplicationId,
        hash: &ApiKeyHash,
        modified_by: ApplicationId,
        modified_at: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Deletes; `false` when absent.
    async fn delete_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<bool, StoreError>;
}
