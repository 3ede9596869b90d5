//! [`DetachedStore`]: runs each store operation as its own task on the runtime that opened
//! the database.
//!
//! Why: a caller may abandon an operation half-way — a client disconnects, or actix drops the
//! authentication extractor's future because a sibling extractor failed. diesel-async's SQLite
//! wrapper reacts to being dropped mid-query by blocking in `Drop` (`block_in_place`), which
//! panics on the single-threaded runtimes actix workers use. As a spawned task the operation
//! always runs to completion (the caller's drop merely detaches it), and PostgreSQL connections
//! stay on the multi-threaded runtime that created them.
//!
//! Point reads are the exception: they run on the caller's task, on the read path of
//! [`Database`]'s pools (SQLite connections run in-process, PostgreSQL connections whose I/O
//! stays on the calling thread), where being dropped half-way is harmless: a SQLite read runs
//! to its end inside one poll, and dropping a PostgreSQL read only discards its answer. They
//! are what a cold proxy request does three times, and the hop to another runtime and back was
//! most of its time. Token reads by id go through this thread's read batch on PostgreSQL
//! (`read_batch`): concurrent requests' reads share one statement.

use std::{future::Future, sync::Arc};

use async_trait::async_trait;
use tessera_domain::{
    application::{Application, ApplicationKey},
    audit::{AuditAppender, AuditBlock, AuditEvent, BlockSpan, ChainAppend, ChainHead},
    cursor::Position,
    store::{
        ApplicationFilter, ApplicationStore, AssociationStore, AuditStore, ConsoleSessionRecord,
        ConsoleSessionStore, ContainerScope, HealthStore, IdempotencyRecord, IdempotencyScope,
        IdempotencyStore, KeyedApplication, NewAssociation, ProxyFilter, ProxyStore,
        SealedProxySecrets, StoreError, StoredApplication, StoredApplicationKey, StoredProxy,
        StoredTenant, StoredToken, TenantStore, TokenFilter, TokenSearch, TokenStore, TokenUpdate,
        UnsealedProxy,
    },
    ApiKeyHash, ApplicationId, ApplicationKeyId, Container, Page, PageRequest, ProxyId, TenantId,
    TokenId, TokenType,
};
use time::OffsetDateTime;
use tokio::runtime::Handle;

use crate::{
    read_batch::{ReadBatchCounts, ReadBatcher},
    Database,
};

/// A [`Database`] whose operations run as detached tasks; see the module docs.
#[derive(Clone, Debug)]
pub struct DetachedStore {
    db: Database,
    runtime: Handle,
    /// Token reads of concurrent requests, one statement per batch per thread.
    reads: Arc<ReadBatcher>,
}

impl DetachedStore {
    /// Wraps `db`, spawning onto the current runtime (call it from the multi-threaded runtime
    /// that should own the database work).
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(db: Database) -> Self {
        Self {
            db,
            runtime: Handle::current(),
            reads: Arc::default(),
        }
    }

    /// The wrapped database.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// How many token reads this store batched into how many statements (for diagnostics
    /// and tests).
    pub fn token_read_batches(&self) -> ReadBatchCounts {
        self.reads.counts()
    }

    async fn run<T, Fut>(&self, op: impl FnOnce(Database) -> Fut) -> Result<T, StoreError>
    where
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        self.runtime
            .spawn(op(self.db.clone()))
            .await
            .map_err(|e| StoreError::Backend(format!("store task failed: {e}")))?
    }

    /// As [`DetachedStore::run`], for a read-only scan whose cost the caller chose (lists,
    /// searches, the audit listing): when the caller drops it — the client went away — the
    /// task is aborted too, so the statement stops on PostgreSQL (see `scan::ScanGuard`)
    /// instead of holding a connection for nobody. Aborting is safe here:
    /// the task runs on the multi-threaded runtime, and a read leaves nothing half-done.
    async fn run_scan<T, Fut>(&self, op: impl FnOnce(Database) -> Fut) -> Result<T, StoreError>
    where
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        struct AbortOnDrop(tokio::task::AbortHandle);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                self.0.abort();
            }
        }
        let task = self.runtime.spawn(op(self.db.clone()));
        let _abort = AbortOnDrop(task.abort_handle());
        task.await
            .map_err(|e| StoreError::Backend(format!("store task failed: {e}")))?
    }
}

#[async_trait]
impl TenantStore for DetachedStore {
    async fn insert_tenant_with_admin(
        &self,
        tenant: &StoredTenant,
        admin: &StoredApplication,
    ) -> Result<(), StoreError> {
        let (tenant, admin) = (tenant.clone(), admin.clone());
        self.run(|db| async move { db.insert_tenant_with_admin(&tenant, &admin).await })
            .await
    }

    async fn get_tenant(&self, id: TenantId) -> Result<Option<StoredTenant>, StoreError> {
        self.db.get_tenant(id).await
    }

    async fn first_tenant(&self) -> Result<Option<StoredTenant>, StoreError> {
        self.run(|db| async move { db.first_tenant().await }).await
    }

    async fn list_tenants(&self) -> Result<Vec<StoredTenant>, StoreError> {
        self.run(|db| async move { db.list_tenants().await }).await
    }

    async fn replace_wrapped_data_key(
        &self,
        tenant: TenantId,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        let (expected, new) = (expected.to_vec(), new.to_vec());
        self.run(|db| async move { db.replace_wrapped_data_key(tenant, &expected, &new).await })
            .await
    }

    async fn get_vault_key(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.db.get_vault_key(name).await
    }

    async fn insert_vault_key(&self, name: &str, wrapped: &[u8]) -> Result<(), StoreError> {
        let (name, wrapped) = (name.to_string(), wrapped.to_vec());
        self.run(|db| async move { db.insert_vault_key(&name, &wrapped).await })
            .await
    }

    async fn replace_vault_key(
        &self,
        name: &str,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError> {
        let (name, expected, new) = (name.to_string(), expected.to_vec(), new.to_vec());
        self.run(|db| async move { db.replace_vault_key(&name, &expected, &new).await })
            .await
    }
}

#[async_trait]
impl ApplicationStore for DetachedStore {
    async fn insert_application(&self, app: &StoredApplication) -> Result<(), StoreError> {
        let app = app.clone();
        self.run(|db| async move { db.insert_application(&app).await })
            .await
    }

    async fn get_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<Option<Application>, StoreError> {
        self.db.get_application(tenant, id).await
    }

    async fn find_application_by_key_hash(
        &self,
        hash: &ApiKeyHash,
    ) -> Result<Option<KeyedApplication>, StoreError> {
        self.db.find_application_by_key_hash(hash).await
    }

    async fn list_applications(
        &self,
        tenant: TenantId,
        filter: &ApplicationFilter,
        page: PageRequest,
    ) -> Result<Page<Application>, StoreError> {
        let filter = filter.clone();
        self.run(|db| async move { db.list_applications(tenant, &filter, page).await })
            .await
    }

    async fn update_application(&self, app: &Application) -> Result<bool, StoreError> {
        let app = app.clone();
        self.run(|db| async move { db.update_application(&app).await })
            .await
    }

    async fn replace_application_keys(
        &self,
        key: &StoredApplicationKey,
        modified_by: ApplicationId,
        modified_at: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let key = key.clone();
        self.run(|db| async move {
            db.replace_application_keys(&key, modified_by, modified_at)
                .await
        })
        .await
    }

    async fn delete_application(
        &self,
        tenant: TenantId,
        id: ApplicationId,
    ) -> Result<bool, StoreError> {
        self.run(|db| async move { db.delete_application(tenant, id).await })
            .await
    }

    async fn insert_application_key(&self, key: &StoredApplicationKey) -> Result<(), StoreError> {
        let key = key.clone();
        self.run(|db| async move { db.insert_application_key(&key).await })
            .await
    }

    async fn list_application_keys(
        &self,
        tenant: TenantId,
        apps: &[ApplicationId],
    ) -> Result<Vec<ApplicationKey>, StoreError> {
        let apps = apps.to_vec();
        self.run(|db| async move { db.list_application_keys(tenant, &apps).await })
            .await
    }

    async fn delete_application_key(
        &self,
        tenant: TenantId,
        app: ApplicationId,
        id: ApplicationKeyId,
    ) -> Result<bool, StoreError> {
        self.run(|db| async move { db.delete_application_key(tenant, app, id).await })
            .await
    }
}

#[async_trait]
impl TokenStore for DetachedStore {
    async fn insert_token(&self, token: &StoredToken) -> Result<(), StoreError> {
        let token = token.clone();
        self.run(|db| async move { db.insert_token(&token).await })
            .await
    }

    async fn get_token(
        &self,
        tenant: TenantId,
        id: TokenId,
    ) -> Result<Option<StoredToken>, StoreError> {
        self.db.get_token(tenant, id).await
    }

    async fn get_tokens(
        &self,
        tenant: TenantId,
        ids: &[TokenId],
    ) -> Result<Vec<StoredToken>, StoreError> {
        self.reads.get_tokens(&self.db, tenant, ids).await
    }

    async fn token_containers(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
    ) -> Result<Vec<Container>, StoreError> {
        let filter = filter.clone();
        self.run_scan(|db| async move { db.token_containers(tenant, &filter).await })
            .await
    }

    async fn list_tokens(
        &self,
        tenant: TenantId,
        filter: &TokenFilter,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
        let (filter, scope) = (filter.clone(), scope.clone());
        self.run_scan(|db| async move { db.list_tokens(tenant, &filter, &scope, page).await })
            .await
    }

    async fn delete_token(&self, tenant: TenantId, id: TokenId) -> Result<bool, StoreError> {
        self.run(|db| async move { db.delete_token(tenant, id).await })
            .await
    }

    async fn insert_tokens(&self, tokens: &[StoredToken]) -> Result<(), StoreError> {
        let tokens = tokens.to_vec();
        self.run(|db| async move { db.insert_tokens(&tokens).await })
            .await
    }

    async fn update_token(&self, update: &TokenUpdate) -> Result<bool, StoreError> {
        let update = update.clone();
        self.run(|db| async move { db.update_token(&update).await })
            .await
    }

    async fn find_duplicate_token(
        &self,
        tenant: TenantId,
        token_type: TokenType,
        container: &Container,
        fingerprint: &str,
        live_at: OffsetDateTime,
    ) -> Result<Option<StoredToken>, StoreError> {
        let (container, fingerprint) = (container.clone(), fingerprint.to_string());
        self.run(|db| async move {
            db.find_duplicate_token(tenant, token_type, &container, &fingerprint, live_at)
                .await
        })
        .await
    }

    async fn search_containers(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
    ) -> Result<Vec<Container>, StoreError> {
        let search = search.clone();
        self.run_scan(|db| async move { db.search_containers(tenant, &search).await })
            .await
    }

    async fn search_tokens(
        &self,
        tenant: TenantId,
        search: &TokenSearch,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, StoreError> {
        let (search, scope) = (search.clone(), scope.clone());
        self.run_scan(|db| async move { db.search_tokens(tenant, &search, &scope, page).await })
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
        let (search, scope) = (search.clone(), scope.clone());
        self.run_scan(|db| async move {
            db.search_tokens_after(tenant, &search, &scope, after, limit)
                .await
        })
        .await
    }

    async fn delete_expired_tokens(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<u64, StoreError> {
        self.run(|db| async move { db.delete_expired_tokens(now, limit).await })
            .await
    }

    async fn unfingerprinted_tokens(&self, limit: u32) -> Result<Vec<StoredToken>, StoreError> {
        self.run(|db| async move { db.unfingerprinted_tokens(limit).await })
            .await
    }

    async fn set_token_fingerprint(
        &self,
        tenant: TenantId,
        id: TokenId,
        fingerprint: &str,
    ) -> Result<(), StoreError> {
        let fingerprint = fingerprint.to_string();
        self.run(|db| async move { db.set_token_fingerprint(tenant, id, &fingerprint).await })
            .await
    }
}

#[async_trait]
impl AuditStore for DetachedStore {
    async fn append_audit_events(
        &self,
        events: &[AuditEvent],
    ) -> Result<Vec<ChainAppend>, StoreError> {
        let events = events.to_vec();
        self.run(|db| async move { db.append_audit_events(&events).await })
            .await
    }

    async fn audit_appender(&self) -> Result<Box<dyn AuditAppender>, StoreError> {
        // On the caller's runtime: the appender's connection belongs to the writer's thread.
        self.db.audit_appender().await
    }

    async fn audit_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
        self.run(|db| async move { db.audit_chain_heads().await })
            .await
    }

    async fn audit_chain_head(
        &self,
        chain: Option<TenantId>,
    ) -> Result<Option<ChainHead>, StoreError> {
        self.run(|db| async move { db.audit_chain_head(chain).await })
            .await
    }

    async fn audit_blocks(
        &self,
        chain: Option<TenantId>,
        after_first_seq: i64,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        self.run_scan(|db| async move { db.audit_blocks(chain, after_first_seq, limit).await })
            .await
    }

    async fn audit_blocks_desc(
        &self,
        chain: Option<TenantId>,
        span: &BlockSpan,
        limit: u32,
    ) -> Result<Vec<AuditBlock>, StoreError> {
        let span = *span;
        self.run_scan(|db| async move { db.audit_blocks_desc(chain, &span, limit).await })
            .await
    }

    async fn prune_audit_events(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        self.run(|db| async move { db.prune_audit_events(before).await })
            .await
    }
}

#[async_trait]
impl IdempotencyStore for DetachedStore {
    async fn claim_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        request_hash: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let (scope, hash) = (scope.clone(), *request_hash);
        self.run(|db| async move { db.claim_idempotency_key(&scope, &hash, now).await })
            .await
    }

    async fn complete_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        response_sealed: &[u8],
    ) -> Result<(), StoreError> {
        let (scope, sealed) = (scope.clone(), response_sealed.to_vec());
        self.run(|db| async move { db.complete_idempotency_key(&scope, &sealed).await })
            .await
    }

    async fn release_idempotency_key(
        &self,
        scope: &IdempotencyScope,
        created_at: OffsetDateTime,
    ) -> Result<(), StoreError> {
        let scope = scope.clone();
        self.run(|db| async move { db.release_idempotency_key(&scope, created_at).await })
            .await
    }

    async fn delete_idempotency_keys_before(
        &self,
        before: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        self.run(|db| async move { db.delete_idempotency_keys_before(before).await })
            .await
    }
}

#[async_trait]
impl ConsoleSessionStore for DetachedStore {
    async fn insert_console_session(
        &self,
        session: &ConsoleSessionRecord,
    ) -> Result<(), StoreError> {
        let session = session.clone();
        self.run(|db| async move { db.insert_console_session(&session).await })
            .await
    }

    async fn get_console_session(
        &self,
        id_hash: &[u8; 32],
    ) -> Result<Option<ConsoleSessionRecord>, StoreError> {
        self.db.get_console_session(id_hash).await
    }

    async fn touch_console_session(
        &self,
        id_hash: &[u8; 32],
        at: OffsetDateTime,
    ) -> Result<(), StoreError> {
        let id_hash = *id_hash;
        self.run(|db| async move { db.touch_console_session(&id_hash, at).await })
            .await
    }

    async fn rekey_console_session(
        &self,
        id_hash: &[u8; 32],
        key_hash: &ApiKeyHash,
        key_sealed: &[u8],
    ) -> Result<(), StoreError> {
        let (id_hash, key_hash, sealed) = (*id_hash, key_hash.clone(), key_sealed.to_vec());
        self.run(|db| async move { db.rekey_console_session(&id_hash, &key_hash, &sealed).await })
            .await
    }

    async fn delete_console_session(&self, id_hash: &[u8; 32]) -> Result<(), StoreError> {
        let id_hash = *id_hash;
        self.run(|db| async move { db.delete_console_session(&id_hash).await })
            .await
    }

    async fn count_console_sessions(&self) -> Result<u64, StoreError> {
        self.db.count_console_sessions().await
    }

    async fn delete_expired_console_sessions(
        &self,
        idle_before: OffsetDateTime,
        opened_before: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        self.run(|db| async move {
            db.delete_expired_console_sessions(idle_before, opened_before)
                .await
        })
        .await
    }
}

#[async_trait]
impl HealthStore for DetachedStore {
    async fn ping(&self) -> Result<(), StoreError> {
        self.run(|db| async move { db.ping().await }).await
    }
}

#[async_trait]
impl AssociationStore for DetachedStore {
    async fn insert_association(&self, link: &NewAssociation) -> Result<(), StoreError> {
        let link = link.clone();
        self.run(|db| async move { db.insert_association(&link).await })
            .await
    }

    async fn delete_association(
        &self,
        tenant: TenantId,
        parent: TokenId,
        child: TokenId,
    ) -> Result<bool, StoreError> {
        self.run(|db| async move { db.delete_association(tenant, parent, child).await })
            .await
    }

    async fn insert_child_token(
        &self,
        child: &StoredToken,
        link: &NewAssociation,
    ) -> Result<(), StoreError> {
        let (child, link) = (child.clone(), link.clone());
        self.run(|db| async move { db.insert_child_token(&child, &link).await })
            .await
    }

    async fn parent_ids(
        &self,
        tenant: TenantId,
        child: TokenId,
        limit: u32,
    ) -> Result<Vec<TokenId>, StoreError> {
        self.run(|db| async move { db.parent_ids(tenant, child, limit).await })
            .await
    }
}

#[async_trait]
impl ProxyStore for DetachedStore {
    async fn insert_proxy(&self, proxy: &StoredProxy) -> Result<(), StoreError> {
        let proxy = proxy.clone();
        self.run(|db| async move { db.insert_proxy(&proxy).await })
            .await
    }

    async fn get_proxy(
        &self,
        tenant: TenantId,
        id: ProxyId,
    ) -> Result<Option<StoredProxy>, StoreError> {
        self.db.get_proxy(tenant, id).await
    }

    async fn find_proxy_by_key(
        &self,
        key_lookup: &[u8; 32],
    ) -> Result<Option<StoredProxy>, StoreError> {
        self.db.find_proxy_by_key(key_lookup).await
    }

    async fn list_proxies(
        &self,
        tenant: TenantId,
        filter: &ProxyFilter,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, StoreError> {
        let filter = filter.clone();
        self.run(|db| async move { db.list_proxies(tenant, &filter, page).await })
            .await
    }

    async fn update_proxy(&self, proxy: &StoredProxy) -> Result<bool, StoreError> {
        let proxy = proxy.clone();
        self.run(|db| async move { db.update_proxy(&proxy).await })
            .await
    }

    async fn unsealed_proxies(&self, limit: u32) -> Result<Vec<UnsealedProxy>, StoreError> {
        self.run(|db| async move { db.unsealed_proxies(limit).await })
            .await
    }

    async fn seal_proxy(
        &self,
        tenant: TenantId,
        id: ProxyId,
        sealed: &SealedProxySecrets,
    ) -> Result<bool, StoreError> {
        let sealed = sealed.clone();
        self.run(|db| async move { db.seal_proxy(tenant, id, &sealed).await })
            .await
    }

    async fn purge_unsealed(&self) -> Result<(), StoreError> {
        self.run(|db| async move { db.purge_unsealed().await })
            .await
    }

    async fn delete_proxy(&self, tenant: TenantId, id: ProxyId) -> Result<bool, StoreError> {
        self.run(|db| async move { db.delete_proxy(tenant, id).await })
            .await
    }

    async fn proxies_using_application(
        &self,
        tenant: TenantId,
        application: ApplicationId,
        limit: u32,
    ) -> Result<Vec<(ProxyId, String)>, StoreError> {
        self.run(|db| async move {
            db.proxies_using_application(tenant, application, limit)
                .await
        })
        .await
    }
}
