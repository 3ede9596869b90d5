//! `PATCH /tokens/{id}`: a JSON merge patch applied to a token, serialised optimistically with
//! concurrent updates of the same token.

use time::OffsetDateTime;

use crate::{
    access::Principal,
    crypto::DataKey,
    error::VaultError,
    ids::TokenId,
    permission::Permission,
    secret::Secret,
    store::{SearchHash, StoreError, StoredToken, TokenUpdate},
    timestamp,
    token::{reads_metadata, Indexing, Token, TokenChanges, TokenPatch},
    validation::ValidationErrors,
};

use super::{sealing::decrypt_with, Vault};

/// How often an update re-reads and retries when another update to the same token landed
/// between its read and its write.
const UPDATE_ATTEMPTS: usize = 8;

/// Whether moving a token's expiry from `current` to `next` brings its deletion forward: an
/// expiry set where there was none, or an earlier one. An expiry is a scheduled delete, so this
/// needs `token:delete` as well as `token:update` (docs/api.md, "Expiry"); keeping,
/// postponing or clearing it does not.
fn schedules_deletion(current: Option<OffsetDateTime>, next: Option<OffsetDateTime>) -> bool {
    match (current, next) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(current), Some(next)) => next < current,
    }
}

impl Vault {
    /// Applies a JSON merge patch to a token: `data` replaced (validated by type,
    /// re-encrypted, re-fingerprinted), `metadata` merged, `expires_at` set or cleared. Needs
    /// `token:update` on its container. Concurrent updates of one token are serialised
    /// optimistically: each re-reads and re-applies its patch when another landed first, so
    /// no merge is lost.
    pub async fn update_token(
        &self,
        caller: &Principal,
        id: TokenId,
        patch: TokenPatch,
    ) -> Result<Token, VaultError> {
        caller.require_somewhere(Permission::TokenUpdate)?;
        let tenant = caller.tenant_id();
        for _ in 0..UPDATE_ATTEMPTS {
            let current = self.stored_token(caller, id.clone()).await?;
            caller.require_on(Permission::TokenUpdate, &current.container)?;
            let now = timestamp::now();
            let mut changes = patch.clone().apply_to(
                current.token_type,
                &current.metadata,
                current.expires_at,
                now,
            )?;
            let holds_cvc = kept_cvc(self.cvc, &current, now, changes.data.as_mut());
            may_apply(caller, &current, &changes)?;
            let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
            let ciphertext = sealed_changes(&key, &current, &changes)?;
            let mask = sealed_mask(&key, &current, &changes)?;
            let (fingerprint, search) = reindexed(&key, &current, &changes)?;
            // Strictly after the version read, so a concurrent writer's expectation can never
            // match a row this write produced.
            let modified_at = now.max(current.modified_at + time::Duration::microseconds(1));
            let update = TokenUpdate {
                tenant_id: tenant,
                id: id.clone(),
                created_at: current.created_at,
                container: current.container.clone(),
                expected_modified_at: current.modified_at,
                live_at: now,
                metadata: changes.metadata.clone(),
                ciphertext: ciphertext.clone(),
                fingerprint: fingerprint.clone(),
                expires_at: changes.expires_at,
                destinations: changes.destinations.clone(),
                search: search.clone(),
                fingerprint_expression: changes.fingerprint_expression.clone(),
                holds_cvc,
                only_if_holding_cvc: false,
                mask: mask.clone(),
                modified_by: caller.application_id(),
                modified_at,
            };
            if self.store.update_token(&update).await? {
                self.token_rows
                    .remove_where(|k, _| k.0 == tenant && k.1 == id);
                let updated = StoredToken {
                    metadata: changes.metadata,
                    ciphertext: ciphertext.unwrap_or(current.ciphertext),
                    fingerprint: fingerprint.unwrap_or(current.fingerprint),
                    expires_at: changes.expires_at,
                    destinations: changes.destinations.unwrap_or(current.destinations.clone()),
                    search_indexes: search.map_or(current.search_indexes.clone(), |s| s.0),
                    fingerprint_expression: changes
                        .fingerprint_expression
                        .unwrap_or(current.fingerprint_expression.clone()),
                    modified_by: caller.application_id(),
                    modified_at,
                    holds_cvc: holds_cvc.unwrap_or(current.holds_cvc),
                    mask: mask.unwrap_or(current.mask.clone()),
                    ..current
                };
                return decrypt_with(&key, self.cvc, updated);
            }
        }
        Err(VaultError::Conflict(
            "the token kept changing while it was being updated; retry".to_string(),
        ))
    }
}

/// Beyond `token:update`: clearing a token's expiry towards deletion needs `token:delete`;
/// choosing where its data may go needs `token:read` with the `reveal` transform (otherwise a `token:update` key with
/// `token:use` could bind a token to its own host and send it there through an ephemeral
/// proxy); so does rendering templates over data the caller did not send, since whether they
/// render (a filter that does not apply, an empty value) tells something of that data
/// (docs/api.md, "`PATCH /tokens/{id}`"); so does changing the mask, which a mask reader
/// could otherwise set to show the whole data (docs/api.md, "Masks").
fn may_apply(
    caller: &Principal,
    current: &StoredToken,
    changes: &TokenChanges,
) -> Result<(), VaultError> {
    if schedules_deletion(current.expires_at, changes.expires_at) {
        caller.require_on(Permission::TokenDelete, &current.container)?;
    }
    if changes.destinations.is_some()
        || changes.mask.is_some()
        || rerenders(current, changes) == Rerender::OverStoredData
    {
        caller.require_reveal(&current.container)?;
    }
    Ok(())
}

/// Whether an update renders the token's search indexes and fingerprint expression again, and
/// over which data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rerender {
    /// Nothing they read changes.
    No,
    /// Over the data the update sends.
    OverNewData,
    /// Over the stored data: the templates change, or the metadata a fingerprint expression
    /// reads.
    OverStoredData,
}

fn rerenders(current: &StoredToken, changes: &TokenChanges) -> Rerender {
    if changes.data.is_some() {
        return Rerender::OverNewData;
    }
    let expression = match &changes.fingerprint_expression {
        Some(changed) => changed.as_deref(),
        None => current.fingerprint_expression.as_deref(),
    };
    if changes.search_indexes.is_some()
        || changes.fingerprint_expression.is_some()
        || (changes.metadata_changed && expression.is_some_and(reads_metadata))
    {
        Rerender::OverStoredData
    } else {
        Rerender::No
    }
}

/// The sealed mask `changes` call for (`None`: unchanged; `Some(None)`: the type's): a new
/// mask is checked over the data the token will hold (the update's, else the stored data).
fn sealed_mask(
    key: &DataKey,
    current: &StoredToken,
    changes: &TokenChanges,
) -> Result<Option<Option<Vec<u8>>>, VaultError> {
    let Some(change) = &changes.mask else {
        return Ok(None);
    };
    let Some(patch) = change else {
        return Ok(Some(None));
    };
    // Merged into the token's own mask as RFC 7396 merges (a member set to `null` removed);
    // a patch that is not an object replaces it.
    let own = current
        .mask
        .as_deref()
        .map(|sealed| crate::token::open_mask(key, current.tenant_id, &current.id, sealed))
        .transpose()?;
    let Some(mask) = crate::token::merge_patch(own, patch) else {
        return Ok(Some(None));
    };
    let mask = &mask;
    let stored;
    let data = match &changes.data {
        Some(data) => data.expose(),
        None => {
            stored = Secret::new(super::sealing::open_data(key, current)?);
            stored.expose()
        }
    };
    let mut errors = ValidationErrors::new();
    crate::token::validate_mask(mask, data, &mut errors);
    errors.into_result()?;
    let sealed = crate::token::seal_mask(key, current.tenant_id, &current.id, mask)?;
    Ok(Some(Some(sealed)))
}

/// Removes a card's CVC from an update's new `data` when the retention, counted from the
/// token's creation, has passed at `now`; whether the new data holds one (`None`: the data
/// does not change). A CVC comes with a card's creation, not after it (docs/operations.md,
/// "CVC retention").
fn kept_cvc(
    cvc: crate::token::CvcRetention,
    current: &StoredToken,
    now: OffsetDateTime,
    data: Option<&mut Secret<serde_json::Value>>,
) -> Option<bool> {
    let data = data?.expose_mut();
    if cvc.is_past(current.created_at, now) {
        crate::token::remove_cvc(current.token_type, data);
    }
    Some(crate::token::holds_cvc(current.token_type, data))
}

/// The new ciphertext `changes` call for (`None`: unchanged). The ciphertext is bound to the
/// destinations too, so it is sealed again when either the data or the binding changes.
fn sealed_changes(
    key: &DataKey,
    current: &StoredToken,
    changes: &TokenChanges,
) -> Result<Option<Vec<u8>>, VaultError> {
    let (tenant, id) = (current.tenant_id, &current.id);
    let destinations = changes
        .destinations
        .as_ref()
        .unwrap_or(&current.destinations)
        .as_ref();
    let binding = crate::binding::sealed_form(destinations);
    Ok(match &changes.data {
        Some(data) => Some(super::sealing::seal_data(
            key,
            tenant,
            id,
            destinations,
            data.expose(),
        )?),
        None if changes.destinations.is_some() => {
            let old = crate::binding::sealed_form(current.destinations.as_ref());
            let plaintext = key.open_token(tenant, id, &old, &current.ciphertext)?;
            Some(key.seal_token(tenant, id, &binding, &plaintext)?)
        }
        None => None,
    })
}

/// New search index templates (`None`: the type's) and the hashes of their values.
type Reindexed = (Option<Vec<String>>, Vec<SearchHash>);

/// The new fingerprint and search indexes (templates and value hashes) `changes` call for
/// (`None`: unchanged): both follow the data, the templates, and — for a fingerprint
/// expression, which may read it — the metadata. A token whose data does not change is
/// decrypted to render them.
fn reindexed(
    key: &DataKey,
    current: &StoredToken,
    changes: &TokenChanges,
) -> Result<(Option<String>, Option<Reindexed>), VaultError> {
    if rerenders(current, changes) == Rerender::No {
        return Ok((None, None));
    }
    let expression = changes
        .fingerprint_expression
        .clone()
        .unwrap_or(current.fingerprint_expression.clone());
    let stored;
    let data = match &changes.data {
        Some(data) => data.expose(),
        None => {
            let binding = crate::binding::sealed_form(current.destinations.as_ref());
            let plain = key.open_token(
                current.tenant_id,
                &current.id,
                &binding,
                &current.ciphertext,
            )?;
            stored = Secret::new(serde_json::from_slice::<serde_json::Value>(&plain).map_err(
                |_| StoreError::Corrupt(format!("token {} data is not JSON", current.id)),
            )?);
            stored.expose()
        }
    };
    let indexes = changes
        .search_indexes
        .clone()
        .unwrap_or(current.search_indexes.clone());
    let mut errors = ValidationErrors::new();
    let indexing = Indexing::read(
        current.token_type,
        indexes.clone(),
        expression,
        data,
        &changes.metadata,
        &mut errors,
    );
    errors.into_result()?;
    let hashes = indexing.search_hashes(key);
    Ok((
        Some(key.fingerprint(indexing.fingerprint_input.expose())),
        Some((indexes, hashes)),
    ))
}
