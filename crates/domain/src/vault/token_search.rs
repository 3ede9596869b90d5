//! `POST /tokens/search`: a tenant's live tokens matching a query, in the containers the
//! caller may search.

use crate::{
    access::Principal,
    error::VaultError,
    pagination::{Page, PageRequest},
    permission::Permission,
    store::{ContainerScope, TokenFilter, TokenSearch},
    timestamp,
    token::Token,
};

use super::{sealing::decrypt_with, tokens::scope_where, Vault};

impl Vault {
    /// Searches the caller's tenant (`POST /tokens/search`), newest first. Needs
    /// `token:search` or `token:read`; tokens in containers the caller may not search are
    /// neither returned nor counted, and expired tokens never appear.
    pub async fn search_tokens(
        &self,
        caller: &Principal,
        search: &TokenSearch,
        page: PageRequest,
    ) -> Result<Page<Token>, VaultError> {
        caller.require_access_somewhere(Permission::TokenSearch)?;
        let tenant = caller.tenant_id();
        let (search, scope) = self
            .readable_live_search(caller, search, Permission::TokenSearch)
            .await?;
        let stored = self
            .store
            .search_tokens(tenant, &search, &scope, page)
            .await?;
        let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
        stored.try_map(|t| decrypt_with(&key, self.cvc, t))
    }

    /// `search` limited to live tokens, and the containers among its matches that the caller
    /// may act on with `permission` (`token:read` to list, `token:search` to search): what
    /// every search (paged or walked) runs over.
    ///
    /// A `data:` or `fingerprint:` term answers whether a guess equals stored data, so it
    /// reaches only containers whose plaintext the caller may see; a caller that may see it
    /// nowhere is refused (docs/api.md, "Transforms").
    pub(super) async fn readable_live_search(
        &self,
        caller: &Principal,
        search: &TokenSearch,
        permission: Permission,
    ) -> Result<(TokenSearch, ContainerScope), VaultError> {
        let guesses = !search.data.is_empty() || search.fingerprint.is_some();
        if guesses && !caller.may_reveal_somewhere(permission) {
            return Err(VaultError::RevealNeeded(crate::container::Container::root()));
        }
        let allowed = |c: &crate::container::Container| {
            if guesses {
                caller.may_reveal_by(permission, c)
            } else {
                caller.may_access(permission, c)
            }
        };
        let mut search = TokenSearch {
            live_at: Some(timestamp::now()),
            ..search.clone()
        };
        // `data:` terms reach the store as keyed hashes only, like the index they match.
        if !search.data.is_empty() {
            let key = self
                .keys
                .data_key(self.store.as_ref(), caller.tenant_id())
                .await?;
            let terms = std::mem::take(&mut search.data);
            search
                .data_hashes
                .extend(terms.iter().map(|t| key.search_hash(t.expose())));
        }
        let tenant = caller.tenant_id();
        // With `data:` terms, the containers searched are those the caller may read among all
        // of the tenant's, not among the matches: which tokens of other containers are indexed
        // under a value then changes neither the answer, nor the count, nor the rows read
        // (docs/api.md, "Search indexes").
        let scope = if search.data_hashes.is_empty() {
            let matching = self.store.search_containers(tenant, &search);
            scope_where(caller, allowed, matching).await?
        } else {
            let everything = TokenFilter::default();
            let every = self.store.token_containers(tenant, &everything);
            scope_where(caller, allowed, every).await?
        };
        Ok((search, scope))
    }
}
