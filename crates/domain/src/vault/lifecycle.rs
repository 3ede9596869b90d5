//! Token lifecycle beyond create/read/delete: merge-patch updates, bulk creation,
//! search, the sweep of expired tokens, and fingerprints for tokens written before them.

use std::collections::HashMap;

use time::OffsetDateTime;

use crate::{
    access::Principal,
    container::Container,
    crypto::DataKey,
    error::VaultError,
    ids::TokenId,
    pagination::{Page, PageRequest},
    permission::Permission,
    secret::Secret,
    store::{
        ContainerScope, SearchHash, StoreError, StoredToken, TokenFilter, TokenSearch, TokenUpdate,
    },
    timestamp,
    token::{
        reads_metadata, IdChoice, Indexing, NewToken, Token, TokenChanges, TokenPatch, TokenType,
    },
    validation::ValidationErrors,
};

use super::{
    new_tokens::{fingerprint_of, Drawn},
    tokens::{decrypt_with, may_create, may_name_id, scope_where},
    Vault,
};

/// What one request of a bulk create is answered with.
enum Answer {
    /// The token created for it (or for an equal earlier one): its position among those
    /// created.
    Created(usize),
    /// The existing token it duplicates.
    Found(Box<Token>),
}

/// Most tokens one `POST /tokenize` may create.
pub const MAX_BULK: usize = 100;

/// How often an update re-reads and retries when another update to the same token landed
/// between its read and its write.
const UPDATE_ATTEMPTS: usize = 8;

/// Rows one sweep round deletes at most (the sweep repeats rounds until none are left).
const SWEEP_BATCH: u32 = 500;

/// How long an `Idempotency-Key` is remembered.
pub const IDEMPOTENCY_WINDOW: time::Duration = time::Duration::hours(24);

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

/// What one sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Expired tokens deleted (with their metadata and associations).
    pub expired_tokens: u64,
    /// `Idempotency-Key`s older than the window deleted.
    pub idempotency_keys: u64,
    /// Audit events older than the retention removed.
    pub audit_events: u64,
    /// Cards whose CVC was removed, its retention past.
    pub cvcs_removed: u64,
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
            stored = Secret::new(super::tokens::open_data(key, current)?);
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
        Some(data) => Some(super::tokens::seal_data(
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

/// What makes two tokens of one bulk create equal for `deduplicate_token`: type, container,
/// fingerprint expression (`None`: the type's) and fingerprint.
type Identity = (TokenType, Container, Option<String>, String);

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

impl Vault {
    /// Creates 1–[`MAX_BULK`] tokens, all or none, returned in request order. Every element is
    /// validated first (problems keyed `[i].field`); `token:create` is needed on every target
    /// container. Elements asking to deduplicate are answered with an existing equal token
    /// (or an earlier element of the same request) instead.
    pub async fn create_tokens(
        &self,
        caller: &Principal,
        inputs: Vec<NewToken>,
    ) -> Result<Vec<Token>, VaultError> {
        let labelled = inputs
            .into_iter()
            .enumerate()
            .map(|(i, input)| (format!("[{i}]."), input))
            .collect();
        self.create_labelled_tokens(caller, labelled).await
    }

    /// As [`Vault::create_tokens`], each request with the prefix its problems are keyed under
    /// (`card.` for a member of an object, `` for a lone request).
    pub async fn create_labelled_tokens(
        &self,
        caller: &Principal,
        inputs: Vec<(String, NewToken)>,
    ) -> Result<Vec<Token>, VaultError> {
        caller.require_somewhere(Permission::TokenCreate)?;
        if inputs.is_empty() || inputs.len() > MAX_BULK {
            return Err(ValidationErrors::single(
                "body",
                format!("must hold 1 to {MAX_BULK} token requests"),
            )
            .into());
        }
        for (_, input) in &inputs {
            may_name_id(caller, input)?;
        }
        let now = timestamp::now();
        let mut errors = ValidationErrors::new();
        let mut valid = Vec::with_capacity(inputs.len());
        let mut chosen: HashMap<TokenId, String> = HashMap::new();
        for (label, input) in inputs {
            match input.validate_at(now) {
                Ok(v) => {
                    if let IdChoice::Chosen(id) = &v.id {
                        if let Some(first) = chosen.insert(id.clone(), label.clone()) {
                            errors.add(format!("{label}id"), format!("repeats {first}id"));
                        }
                    }
                    valid.push((label, v));
                }
                Err(e) => errors.extend_under(&label, e),
            }
        }
        errors.into_result()?;
        for (_, v) in &valid {
            may_create(caller, v)?;
        }
        let key = self
            .keys
            .data_key(self.store.as_ref(), caller.tenant_id())
            .await?;
        // Each answer: a token created here (its position in `drawn`), or an existing one.
        let mut answers: Vec<Answer> = Vec::with_capacity(valid.len());
        let mut drawn = Drawn::with_capacity(valid.len(), self.cvc);
        // (type, container, fingerprint expression, fingerprint) → the answer of the token
        // created for it.
        let mut created_here: HashMap<Identity, usize> = HashMap::new();
        for (label, v) in valid {
            let fingerprint = fingerprint_of(&key, &v);
            let identity = (
                v.token_type,
                v.container.clone(),
                v.indexing.fingerprint_expression.clone(),
                fingerprint.clone(),
            );
            if v.deduplicate {
                if let Some(&earlier) = created_here.get(&identity) {
                    answers.push(Answer::Created(earlier));
                    continue;
                }
                if let Some(found) = self
                    .find_duplicate(caller, &key, &v, &fingerprint, now)
                    .await?
                {
                    answers.push(Answer::Found(Box::new(found)));
                    continue;
                }
            }
            let at = drawn.push(caller, &key, label, v, fingerprint)?;
            created_here.entry(identity).or_insert(at);
            answers.push(Answer::Created(at));
        }
        if !drawn.rows.is_empty() {
            let insert = async |rows: &[StoredToken]| self.store.insert_tokens(rows).await;
            self.insert_settled(caller, &key, &mut drawn, insert)
                .await?;
        }
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                Answer::Created(at) => drawn.tokens[at].clone(),
                Answer::Found(found) => *found,
            })
            .collect())
    }

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

    /// One round of maintenance: deletes every token expired by now (in batches) and every
    /// `Idempotency-Key` older than [`IDEMPOTENCY_WINDOW`], and removes every card's CVC past
    /// its retention. Safe to run in several processes
    /// over one database at once.
    pub async fn sweep(&self) -> Result<SweepReport, VaultError> {
        self.sweep_at(timestamp::now()).await
    }

    /// [`Vault::sweep`] as of `now`.
    pub async fn sweep_at(&self, now: OffsetDateTime) -> Result<SweepReport, VaultError> {
        let mut report = SweepReport::default();
        loop {
            let deleted = self.store.delete_expired_tokens(now, SWEEP_BATCH).await?;
            report.expired_tokens += deleted;
            if deleted < u64::from(SWEEP_BATCH) {
                break;
            }
        }
        if report.expired_tokens > 0 {
            // Rows cached by the gateway are checked for expiry on use; dropping them frees
            // the memory sooner.
            self.token_rows.remove_where(|_, row| !row.is_live_at(now));
        }
        report.idempotency_keys = self
            .store
            .delete_idempotency_keys_before(now - IDEMPOTENCY_WINDOW)
            .await?;
        report.cvcs_removed = self.remove_expired_cvcs(now).await?;
        if let Some(retention) = self.audit_retention {
            report.audit_events = self.prune_audit_at(retention, now).await?;
        }
        Ok(report)
    }

    /// Computes the fingerprint of every token written before fingerprints existed (start-up
    /// runs this; rows not reached yet get theirs computed when read). Returns how many.
    pub async fn backfill_fingerprints(&self) -> Result<u64, VaultError> {
        let mut done = 0u64;
        loop {
            let batch = self.store.unfingerprinted_tokens(SWEEP_BATCH).await?;
            if batch.is_empty() {
                return Ok(done);
            }
            for stored in batch {
                let (tenant, id) = (stored.tenant_id, stored.id.clone());
                let key = self.keys.data_key(self.store.as_ref(), tenant).await?;
                let token = decrypt_with(&key, self.cvc, stored)?;
                self.store
                    .set_token_fingerprint(tenant, id, &token.fingerprint)
                    .await?;
                done += 1;
            }
        }
    }
}
