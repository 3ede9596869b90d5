//! Use-cases of detokenization: finding a proxy by its key, fetching the tokens a proxied
//! request detokenizes (with `token:use` checked on each), and fetching the tokens `POST
//! /detokenize` reveals to its caller (with `token:read` checked on each).

use std::{collections::BTreeSet, sync::Arc};

use crate::{
    access::Principal,
    crypto::{self, DataKey},
    error::VaultError,
    ids::{ApplicationId, TenantId, TokenId},
    permission::Permission,
    proxy::{self, Proxy},
    secret::Secret,
    store::StoredToken,
    token::Token,
};

use super::{sealing::decrypt_with, Vault};

impl Vault {
    /// The proxy holding invocation key `key`, in whatever tenant; `None` when no proxy has it.
    /// The key is found through its keyed lookup hash. Cached briefly, negative answers
    /// included (see [`Vault::with_cache_ttl`]). A key not of the shape every invocation key
    /// has ([`proxy::KEY_CHARS`] ASCII letters and digits) is `None` at once: it is neither
    /// looked up nor cached, so junk keys cost no store read and no memory.
    pub async fn proxy_by_key(&self, key: &str) -> Result<Option<Arc<Proxy>>, VaultError> {
        if !proxy::is_well_formed_key(key) {
            return Ok(None);
        }
        let cache_key = Secret::new(key.to_string());
        if let Some(hit) = self.proxies.get(&cache_key) {
            return Ok(hit);
        }
        let ticket = self.proxies.begin();
        let lookup = self.proxy_key_lookup(key).await?;
        let found = match self.store.find_proxy_by_key(&lookup).await? {
            Some(stored) => Some(Arc::new(self.open_proxy(stored).await?)),
            None => None,
        };
        self.proxies.insert(ticket, cache_key, found.clone());
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
            .map(|a| self.principal(&a))
            .ok_or(VaultError::NotFound(crate::error::Resource::Application))?;
        self.applications
            .insert(ticket, (tenant, app), principal.clone());
        Ok(principal)
    }

    /// Fetches `ids` of the caller's tenant — rows not in the short-lived cache in one store
    /// call — requiring `token:use` on the container of each, and hands them back still
    /// encrypted, so the caller can weigh their sizes before anything is decrypted. Ids that do
    /// not exist in the tenant are left out (the caller reports them as unknown, exactly like
    /// another tenant's ids).
    pub async fn tokens_for_use(
        &self,
        caller: &Principal,
        ids: &BTreeSet<TokenId>,
    ) -> Result<SealedTokens, VaultError> {
        self.sealed_tokens(caller, ids, Permission::TokenUse).await
    }

    /// The tokens of a detokenization whose result goes back to the caller (`POST
    /// /detokenize`), fetched like [`Vault::tokens_for_use`] but requiring `token:read` on the
    /// container of each: the caller learns the values. A caller without `token:read` anywhere
    /// is refused before anything is read. A destination-bound token is refused (403 naming
    /// it), before anything is decrypted: the caller is none of its destinations. Ids that do
    /// not exist in the tenant are left out, as in [`Vault::tokens_for_use`].
    pub async fn tokens_for_read(
        &self,
        caller: &Principal,
        ids: &BTreeSet<TokenId>,
    ) -> Result<SealedTokens, VaultError> {
        caller.require_somewhere(Permission::TokenRead)?;
        let sealed = self
            .sealed_tokens(caller, ids, Permission::TokenRead)
            .await?;
        if let Some(bound) = sealed.rows.iter().find(|r| r.destinations.is_some()) {
            return Err(VaultError::DestinationRefused(format!(
                "token {} is bound to destinations: it is detokenized only through a proxy to one of them",
                bound.id
            )));
        }
        Ok(sealed)
    }

    /// The live rows of `ids` in the caller's tenant, `permission` required on each container.
    async fn sealed_tokens(
        &self,
        caller: &Principal,
        ids: &BTreeSet<TokenId>,
        permission: Permission,
    ) -> Result<SealedTokens, VaultError> {
        let tenant = caller.tenant_id();
        let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
        let mut rows = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for id in ids {
            match self.token_rows.get(&(tenant, id.clone())) {
                Some(row) => rows.push(row),
                None => missing.push(id.clone()),
            }
        }
        if !missing.is_empty() {
            let ticket = self.token_rows.begin();
            for row in self.store.get_tokens(tenant, &missing).await? {
                self.token_rows
                    .insert(ticket, (tenant, row.id.clone()), row.clone());
                rows.push(row);
            }
        }
        // Expired rows (fetched, or cached before they expired) are as absent.
        let now = crate::timestamp::now();
        rows.retain(|row| row.is_live_at(now));
        for token in &rows {
            caller.require_on(permission, &token.container)?;
        }
        Ok(SealedTokens {
            rows,
            key,
            cvc: self.cvc,
        })
    }
}

/// Tokens a caller may use or read, fetched and checked but still encrypted.
pub struct SealedTokens {
    rows: Vec<StoredToken>,
    key: Arc<DataKey>,
    cvc: crate::token::CvcRetention,
}

impl std::fmt::Debug for SealedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedTokens")
            .field("count", &self.rows.len())
            .finish_non_exhaustive()
    }
}

/// Upper bounds, in bytes, of a token's JSON forms, known without decrypting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSize {
    /// The data's compact JSON (exact: the plaintext is that JSON).
    pub data: u64,
    /// The whole token object ([`crate::token::TokenView`] with data), bounded from above.
    pub object: u64,
}

/// Room for the fixed fields of a token object: ids, type, timestamps, names and punctuation.
const OBJECT_OVERHEAD: u64 = 768;

impl SealedTokens {
    /// Each token's id and sizes.
    pub fn sizes(&self) -> impl Iterator<Item = (TokenId, TokenSize)> + '_ {
        self.rows.iter().map(|row| {
            let data = crypto::plaintext_len(&row.ciphertext) as u64;
            // A string escapes to at most 6 bytes per byte (`\u0000`), plus quotes and separators.
            let metadata = row.metadata.iter().fold(2u64, |n, (k, v)| {
                n.saturating_add(((k.len() + v.len()) as u64).saturating_mul(6) + 6)
            });
            // A chosen id beyond the UUID the overhead holds, escaped at most 6 bytes a byte.
            let id = match row.id.as_uuid() {
                Some(_) => 0,
                None => (row.id.as_bytes().len() as u64).saturating_mul(6),
            };
            let object = data
                .saturating_add(metadata)
                .saturating_add(id)
                .saturating_add(row.container.as_str().len() as u64)
                .saturating_add(OBJECT_OVERHEAD);
            (row.id.clone(), TokenSize { data, object })
        })
    }

    /// `Ok` when every token may be sent to `target` (see [`crate::binding::check`]): checked
    /// before anything is decrypted, so a refused request carries nothing anywhere.
    pub fn check_target(
        &self,
        target: &crate::binding::Target,
        allow_unbound: bool,
    ) -> Result<(), VaultError> {
        self.rows.iter().try_for_each(|row| {
            crate::binding::check(&row.id, row.destinations.as_ref(), target, allow_unbound)
        })
    }

    /// Decrypts every token.
    pub fn open(self) -> Result<Vec<Token>, VaultError> {
        let (key, cvc) = (self.key, self.cvc);
        self.rows
            .into_iter()
            .map(|row| decrypt_with(&key, cvc, row))
            .collect()
    }
}
