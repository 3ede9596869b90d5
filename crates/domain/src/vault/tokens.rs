//! Token use-cases: create (with deduplication), read, list, delete. Expired tokens answer
//! as unknown everywhere; update (`token_update.rs`), bulk creation (`bulk_create.rs`),
//! search (`token_search.rs`) and the sweep (`sweep.rs`) have files of their own.

use std::sync::Arc;

use time::OffsetDateTime;

use crate::{
    access::Principal,
    application::ApplicationType,
    error::{Resource, VaultError},
    ids::TokenId,
    pagination::{Page, PageRequest},
    permission::Permission,
    store::{ContainerScope, Duplicate, StoreError, StoredToken, TokenFilter},
    timestamp,
    token::{NewToken, Token, ValidToken},
};

use super::{
    new_tokens::{fingerprint_of, Drawn},
    sealing::decrypt_with,
    Vault,
};
use crate::crypto::DataKey;

impl Vault {
    /// Validates, encrypts and stores a token. Needs `token:create` on the token's container.
    /// With `deduplicate_token`, an existing equal token may be returned instead (see
    /// [`Vault::create_or_find_token`]).
    pub async fn create_token(
        &self,
        caller: &Principal,
        input: NewToken,
    ) -> Result<Token, VaultError> {
        Ok(self.create_or_find_token(caller, input).await?.0)
    }

    /// As [`Vault::create_token`], also telling whether a token was created (`true`) or, asked
    /// to deduplicate, an existing live token of the same tenant, type, container and
    /// fingerprint was found (`false`; returned as it is, its data included).
    pub async fn create_or_find_token(
        &self,
        caller: &Principal,
        input: NewToken,
    ) -> Result<(Token, bool), VaultError> {
        caller.require_somewhere(Permission::TokenCreate)?;
        may_name_id(caller, &input)?;
        let now = timestamp::now();
        let valid = input.validate_at(now)?;
        may_create(caller, &valid)?;
        let (key, fingerprint, duplicate) = self.prepare_create(caller, &valid, now).await?;
        if let Some(found) = duplicate {
            return Ok((found, false));
        }
        let mut drawn = Drawn::with_capacity(1, self.cvc);
        drawn.push(caller, &key, String::new(), valid, fingerprint)?;
        let insert = async |rows: &[StoredToken]| self.store.insert_token(&rows[0]).await;
        self.insert_settled(caller, &key, &mut drawn, insert)
            .await?;
        Ok((drawn.tokens.remove(0), true))
    }

    /// What every single-token create starts with: the tenant's data key, `valid`'s
    /// fingerprint under it, and — when `valid` asks to deduplicate — the live token it
    /// duplicates, if any.
    pub(super) async fn prepare_create(
        &self,
        caller: &Principal,
        valid: &ValidToken,
        now: OffsetDateTime,
    ) -> Result<(Arc<DataKey>, String, Option<Token>), VaultError> {
        let key = self
            .keys
            .data_key(self.store.as_ref(), caller.tenant_id())
            .await?;
        let fingerprint = fingerprint_of(&key, valid);
        let duplicate = if valid.deduplicate {
            self.find_duplicate(caller, &key, valid, &fingerprint, now)
                .await?
        } else {
            None
        };
        Ok((key, fingerprint, duplicate))
    }

    /// The live token of the caller's tenant that `valid` (whose fingerprint under the
    /// tenant's `key` is `fingerprint`) duplicates, if any, decrypted. Refused (before any
    /// lookup) to a caller without `token:read` on the container searched; see
    /// [`require_dedup_read`].
    pub(super) async fn find_duplicate(
        &self,
        caller: &Principal,
        key: &DataKey,
        valid: &ValidToken,
        fingerprint: &str,
        now: OffsetDateTime,
    ) -> Result<Option<Token>, VaultError> {
        require_dedup_read(caller, valid)?;
        match self
            .store
            .find_duplicate_token(
                caller.tenant_id(),
                &Duplicate {
                    token_type: valid.token_type,
                    container: &valid.container,
                    fingerprint_expression: valid.indexing.fingerprint_expression.as_deref(),
                    fingerprint,
                },
                now,
            )
            .await?
        {
            Some(stored) => Ok(Some(decrypt_with(key, self.cvc, stored)?)),
            None => Ok(None),
        }
    }

    /// Reads and decrypts one token. Needs `token:read` on its container.
    pub async fn get_token(&self, caller: &Principal, id: TokenId) -> Result<Token, VaultError> {
        caller.require_somewhere(Permission::TokenRead)?;
        let stored = self.stored_token(caller, id).await?;
        caller.require_on(Permission::TokenRead, &stored.container)?;
        self.decrypt(stored).await
    }

    /// Lists tokens the caller may read, with filters and pagination. Tokens in containers the
    /// caller may not read are neither returned nor counted.
    pub async fn list_tokens(
        &self,
        caller: &Principal,
        filter: &TokenFilter,
        page: PageRequest,
    ) -> Result<Page<Token>, VaultError> {
        caller.require_somewhere(Permission::TokenRead)?;
        let tenant = caller.tenant_id();
        let filter = TokenFilter {
            live_at: Some(timestamp::now()),
            ..filter.clone()
        };
        let scope = self
            .readable_scope(caller, Permission::TokenRead, &filter)
            .await?;
        self.list_in_scope(tenant, &filter, &scope, page).await
    }

    /// Lists and decrypts a page within an already computed scope.
    pub(super) async fn list_in_scope(
        &self,
        tenant: crate::ids::TenantId,
        filter: &TokenFilter,
        scope: &ContainerScope,
        page: PageRequest,
    ) -> Result<Page<Token>, VaultError> {
        let stored = self.store.list_tokens(tenant, filter, scope, page).await?;
        let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
        stored.try_map(|t| decrypt_with(&key, self.cvc, t))
    }

    /// Deletes a token and its metadata. Needs `token:delete` on its container.
    pub async fn delete_token(&self, caller: &Principal, id: TokenId) -> Result<(), VaultError> {
        caller.require_somewhere(Permission::TokenDelete)?;
        let stored = self.stored_token(caller, id.clone()).await?;
        caller.require_on(Permission::TokenDelete, &stored.container)?;
        if self
            .store
            .delete_token(caller.tenant_id(), id.clone())
            .await?
        {
            let tenant = caller.tenant_id();
            self.token_rows
                .remove_where(|key, _| key.0 == tenant && key.1 == id);
            Ok(())
        } else {
            Err(VaultError::NotFound(Resource::Token))
        }
    }

    /// One live token of the caller's tenant, still encrypted; an expired one is as absent.
    pub(super) async fn stored_token(
        &self,
        caller: &Principal,
        id: TokenId,
    ) -> Result<StoredToken, VaultError> {
        self.store
            .get_token(caller.tenant_id(), id)
            .await?
            .filter(|t| t.is_live_at(timestamp::now()))
            .ok_or(VaultError::NotFound(Resource::Token))
    }

    /// The containers whose tokens the caller holds `permission` on, among those `filter`
    /// could return. Callers without rules skip the lookup.
    pub(super) async fn readable_scope(
        &self,
        caller: &Principal,
        permission: Permission,
        filter: &TokenFilter,
    ) -> Result<ContainerScope, VaultError> {
        scope_among(
            caller,
            permission,
            self.store.token_containers(caller.tenant_id(), filter),
        )
        .await
    }

    async fn decrypt(&self, stored: StoredToken) -> Result<Token, VaultError> {
        let key = self
            .keys
            .data_key(self.store.as_ref(), stored.tenant_id)
            .await?;
        decrypt_with(&key, self.cvc, stored)
    }
}

/// What creating `valid` needs beyond `token:create` somewhere: `token:create` on its
/// container, `token:read` there too when it asks to deduplicate ([`require_dedup_read`]),
/// and, when it names its own id, a `private` or `management` key: a browser's `public` key
/// could otherwise take the ids an import is about to use (docs/migrating.md).
pub(super) fn may_create(caller: &Principal, valid: &ValidToken) -> Result<(), VaultError> {
    caller.require_on(Permission::TokenCreate, &valid.container)?;
    require_dedup_read(caller, valid)?;
    if valid.id.is_asked() {
        refuse_public_id(caller)?;
    }
    Ok(())
}

/// Refuses a `public` key that names an `id` at all, before the request is validated: an
/// alias template is not rendered, nor a chosen id looked at, for a caller that may use
/// neither.
pub(super) fn may_name_id(caller: &Principal, input: &NewToken) -> Result<(), VaultError> {
    if input.id.is_some() {
        refuse_public_id(caller)?;
    }
    Ok(())
}

fn refuse_public_id(caller: &Principal) -> Result<(), VaultError> {
    if caller.app_type() == ApplicationType::Public {
        return Err(VaultError::KeyTypeRefused(
            "a public key cannot choose token ids, nor alias templates; use a private or management key",
        ));
    }
    Ok(())
}

/// Deduplication answers whether an equal token exists in the target container, and which:
/// an oracle on token data unless the caller may read that container's tokens anyway. So a
/// caller asking to deduplicate needs `token:read` there, with the `reveal` transform (a mask
/// reader could otherwise test guesses of what its mask hides), as well as `token:create`,
/// whatever exists (docs/api.md, "Fingerprints and deduplication"). Checked before anything is looked up, so the
/// answer cannot depend on the store.
pub(super) fn require_dedup_read(caller: &Principal, valid: &ValidToken) -> Result<(), VaultError> {
    if valid.deduplicate {
        caller.require_reveal(&valid.container)?;
    }
    Ok(())
}

/// The containers whose tokens `caller` may act on with `permission` (`token:read` allowing
/// `token:search`), among `containers` (a store lookup, awaited only for callers with rules:
/// the others may read everything).
pub(super) async fn scope_among(
    caller: &Principal,
    permission: Permission,
    containers: impl std::future::Future<Output = Result<Vec<crate::container::Container>, StoreError>>,
) -> Result<ContainerScope, VaultError> {
    scope_where(caller, |c| caller.may_access(permission, c), containers).await
}

/// The containers among `containers` that `allowed` keeps; everything for a caller without
/// rules, whose grants are the same on every container.
pub(super) async fn scope_where(
    caller: &Principal,
    allowed: impl Fn(&crate::container::Container) -> bool,
    containers: impl std::future::Future<Output = Result<Vec<crate::container::Container>, StoreError>>,
) -> Result<ContainerScope, VaultError> {
    if caller.is_unscoped() {
        return Ok(ContainerScope::All);
    }
    Ok(ContainerScope::Only(
        containers
            .await?
            .into_iter()
            .filter(|c| allowed(c))
            .collect(),
    ))
}
