//! Use-cases of proxy invocation: finding a proxy by its key, and fetching the tokens a request
//! detokenizes, with `token:use` checked on each.

use std::{collections::BTreeSet, sync::Arc};

use crate::{
    access::Principal,
    error::VaultError,
    ids::{ApplicationId, TenantId, TokenId},
    permission::Permission,
    proxy::Proxy,
    token::Token,
};

use super::{tokens::decrypt_with, Vault};

impl Vault {
    /// The proxy holding invocation key `key`, in whatever tenant; `None` when no proxy has it.
    /// Cached briefly, negative answers included (see [`Vault::with_cache_ttl`]).
    pub async fn proxy_by_key(&self, key: &str) -> Result<Option<Arc<Proxy>>, VaultError> {
        if let Some(hit) = self.proxies.get(&key.to_string()) {
            return Ok(hit);
        }
        let ticket = self.proxies.begin();
        let found = match self.store.find_proxy_by_key(key).await? {
            Some(stored) => Some(Arc::new(self.open_proxy(stored, None).await?)),
            None => None,
        };
        self.proxies.insert(ticket, key.to_string(), found.clone());
        Ok(found)
    }

    /// The principal of application `app` of `tenant`, for acting as it (a proxy's `req.svc`).
    /// Cached like API keys: a change through this vault applies at once, one made by another
    /// process within the cache TTL.
    pub async fn application_principal(
        &self,
        tenant: TenantId,
        app: ApplicationId,
    ) -> Result<Principal, VaultError> {
        if let Some(hit) = self.applications.get(&(tenant, app)) {
            return Ok(hit);
        }
        let ticket = self.applications.begin();
        let principal = self
            .store
            .get_application(tenant, app)
            .await?
            .map(|a| Principal::new(&a))
            .ok_or(VaultError::NotFound(crate::error::Resource::Application))?;
        self.applications
            .insert(ticket, (tenant, app), principal.clone());
        Ok(principal)
    }

    /// Fetches and decrypts `ids` of the caller's tenant — rows not in the short-lived cache
    /// in one store call — requiring `token:use` on the container of each. Ids that do not exist in the tenant are left out
    /// (the caller reports them as unknown, exactly like another tenant's ids).
    pub async fn tokens_for_use(
        &self,
        caller: &Principal,
        ids: &BTreeSet<TokenId>,
    ) -> Result<Vec<Token>, VaultError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let tenant = caller.tenant_id();
        let mut rows = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for id in ids {
            match self.token_rows.get(&(tenant, *id)) {
                Some(row) => rows.push(row),
                None => missing.push(*id),
            }
        }
        if !missing.is_empty() {
            let ticket = self.token_rows.begin();
            for row in self.store.get_tokens(tenant, &missing).await? {
                self.token_rows
                    .insert(ticket, (tenant, row.id), row.clone());
                rows.push(row);
            }
        }
        for token in &rows {
            caller.require_on(Permission::TokenUse, &token.container)?;
        }
        let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
        rows.into_iter().map(|t| decrypt_with(&key, t)).collect()
    }
}
