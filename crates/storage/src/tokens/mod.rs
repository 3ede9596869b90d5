//! [`TokenStore`] for both backends, one concern per file:
//!
//! * `insert`: new tokens, their metadata rows and a child's link, a statement per table;
//! * `crud`: point reads, the optimistic update, delete, the duplicate lookup;
//! * `list` and `children`: a filtered list, and a parent's children through the link index;
//! * `search`: `POST /tokens/search`, driven by its rarest metadata pair;
//! * `walk`: cursor pages, the same search read as a keyset walk;
//! * `expiry`: the sweep of expired tokens;
//! * `backfill`: fingerprints for tokens written before fingerprints existed;
//! * `queries`: the criteria as column values and the boxed queries the others share.
//!
//! Here, the domain's criteria become column values, and a scope that admits no container
//! is answered without a query.

mod backfill;
mod children;
mod crud;
mod cvc;
mod expiry;
mod insert;
mod list;
mod queries;
mod search;
mod walk;

use async_trait::async_trait;
use tessera_domain::{
    cursor::Position,
    store::{
        ContainerScope, Duplicate, StoreError, StoredToken, TokenFilter, TokenSearch, TokenStore,
        TokenUpdate,
    },
    Container, Page, PageRequest, TenantId, TokenId,
};
use time::OffsetDateTime;

use self::queries::{empty_page, FilterParams, SearchParams};
use crate::database::Database;

#[async_trait]
impl TokenStore for Database {
    async fn insert_token(&self, token: &StoredToken) -> Result<(), StoreError> {
        self.insert_token_rows(token, None).await
    }

    async fn get_token(
        &self,
        tenant: TenantId,
        id: TokenId,
    ) -> Result<Option<StoredToken>, StoreError> {
        self.read_token(tenant, id).await
    }

    async fn get_tokens(
        &self,
        tenant: TenantId,
        ids: &[TokenId],
    ) -> Result<Vec<StoredToken>, StoreError> {
        self.read_tokens(tenant, ids).await
    }

    async fn token_containers(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
    ) -> Result<Vec<Container>, StoreError> {
        self.listed_containers(&FilterParams::new(tenant, filter, &ContainerScope::All))
            .await
    }

    async fn list_tokens(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
        if let Some(empty) = empty_page(scope, page) {
            return Ok(empty);
        }
        self.list_page(&FilterParams::new(tenant, filter, scope), page)
            .await
    }

    async fn delete_token(&self, tenant: TenantId, id: TokenId) -> Result<bool, StoreError> {
        self.remove_token(tenant, id).await
    }

    async fn insert_tokens(&self, batch: &[StoredToken]) -> Result<(), StoreError> {
        self.insert_token_batch(batch).await
    }

    async fn update_token(&self, update: &TokenUpdate) -> Result<bool, StoreError> {
        self.write_token_update(update).await
    }

    async fn find_duplicate_token(
        &self,
        tenant: TenantId,
        duplicate: &Duplicate<'_>,
        live_at: OffsetDateTime,
    ) -> Result<Option<StoredToken>, StoreError> {
        self.oldest_duplicate(tenant, duplicate, live_at).await
    }

    async fn search_containers(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
    ) -> Result<Vec<Container>, StoreError> {
        self.searched_containers(SearchParams::new(tenant, search, &ContainerScope::All))
            .await
    }

    async fn search_tokens(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
        if let Some(empty) = empty_page(scope, page) {
            return Ok(empty);
        }
        self.search_page(SearchParams::new(tenant, search, scope), page)
            .await
    }

    async fn search_tokens_after(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
        scope: &ContainerScope,
        after: Option<Position>,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError> {
        if matches!(scope, ContainerScope::Only(cs) if cs.is_empty()) {
            return Ok(Vec::new());
        }
        self.walk_page(SearchParams::new(tenant, search, scope), after, limit)
            .await
    }

    async fn delete_expired_tokens(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<u64, StoreError> {
        self.sweep_expired(now, limit).await
    }

    async fn tokens_holding_cvc(
        &self,
        created_by: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError> {
        self.read_holding_cvc(created_by, limit).await
    }

    async fn unfingerprinted_tokens(&self, limit: u32) -> Result<Vec<StoredToken>, StoreError> {
        self.read_unfingerprinted(limit).await
    }

    async fn set_token_fingerprint(
        &self,
        tenant: TenantId,
        id: TokenId,
        fingerprint: &str,
    ) -> Result<(), StoreError> {
        self.backfill_fingerprint(tenant, id, fingerprint).await
    }
}
