//! Sealing new tokens and settling their ids on insert (docs/api.md, "Token ids"): a chosen id
//! that is taken is a 409 naming it; an alias template is drawn again when its draw is taken
//! (up to [`ALIAS_DRAWS`] draws), then becomes a random UUID, as Basis Theory does.

use std::collections::HashSet;

use crate::{
    access::Principal,
    crypto::DataKey,
    error::VaultError,
    ids::TokenId,
    store::{StoreError, StoredToken},
    timestamp,
    token::{holds_cvc, remove_cvc, seal_mask, CvcRetention, Token, ValidToken, ALIAS_DRAWS},
};

use super::{sealing::seal_data, Vault};

/// The fingerprint of a validated token under its tenant's `key`: of what its fingerprint
/// expression (or its type's default) renders.
pub(super) fn fingerprint_of(key: &DataKey, valid: &ValidToken) -> String {
    key.fingerprint(valid.indexing.fingerprint_input.expose())
}

/// Encrypts a validated token under `id` (its `fingerprint` computed with the same `key`)
/// into the row to store, returning the row and the token as the caller sees it.
pub(super) fn seal_new_token(
    caller: &Principal,
    key: &DataKey,
    valid: &ValidToken,
    id: TokenId,
    fingerprint: String,
) -> Result<(StoredToken, Token), VaultError> {
    let tenant = caller.tenant_id();
    let ciphertext = seal_data(
        key,
        tenant,
        &id,
        valid.destinations.as_ref(),
        valid.data.expose(),
    )?;
    let now = timestamp::now();
    let id_for_mask = id.clone();
    let stored = StoredToken {
        id,
        tenant_id: tenant,
        token_type: valid.token_type,
        container: valid.container.clone(),
        metadata: valid.metadata.clone(),
        ciphertext,
        created_by: caller.application_id(),
        created_at: now,
        modified_by: caller.application_id(),
        modified_at: now,
        fingerprint,
        expires_at: valid.expires_at,
        destinations: valid.destinations.clone(),
        search_indexes: valid.indexing.search_indexes.clone(),
        fingerprint_expression: valid.indexing.fingerprint_expression.clone(),
        search_hashes: valid.indexing.search_hashes(key),
        holds_cvc: holds_cvc(valid.token_type, valid.data.expose()),
        mask: valid
            .mask
            .as_ref()
            .map(|mask| seal_mask(key, tenant, &id_for_mask, mask))
            .transpose()?,
    };
    let token = Token {
        id: stored.id.clone(),
        tenant_id: tenant,
        token_type: stored.token_type,
        data: valid.data.clone(),
        metadata: stored.metadata.clone(),
        container: stored.container.clone(),
        created_by: stored.created_by,
        created_at: stored.created_at,
        modified_by: stored.modified_by,
        modified_at: stored.modified_at,
        fingerprint: stored.fingerprint.clone(),
        expires_at: stored.expires_at,
        destinations: stored.destinations.clone(),
        search_indexes: stored.search_indexes.clone(),
        fingerprint_expression: stored.fingerprint_expression.clone(),
        mask: valid.mask.clone(),
    };
    Ok((stored, token))
}

/// The 409 of an id the caller chose that is taken in its tenant, naming the id (and, in a
/// bulk create, where it was asked).
pub(super) fn taken(id: &TokenId, label: &str) -> VaultError {
    VaultError::IdsTaken(vec![(label.to_string(), id.clone())])
}

/// The tokens of one create, sealed under their current ids, until they are stored: the rows
/// to insert, and beside each what drawing its id again needs.
pub(super) struct Drawn {
    /// The rows, in request order.
    pub(super) rows: Vec<StoredToken>,
    /// The answers, in the same order.
    pub(super) tokens: Vec<Token>,
    /// Beside each row: its label, its request and fingerprint, and how many ids it was given.
    asked: Vec<Asked>,
    /// How long a card's CVC is kept: with none, it is never sealed.
    cvc: CvcRetention,
}

/// What drawing a token's id again needs.
struct Asked {
    label: String,
    valid: ValidToken,
    fingerprint: String,
    draws: usize,
}

impl Drawn {
    /// No token yet; cards keep their CVC for `cvc`.
    pub(super) fn with_capacity(n: usize, cvc: CvcRetention) -> Self {
        Self {
            rows: Vec::with_capacity(n),
            tokens: Vec::with_capacity(n),
            asked: Vec::with_capacity(n),
            cvc,
        }
    }

    /// Adds `valid` (whose problems are keyed under `label`), sealed under its first id;
    /// returns its position.
    pub(super) fn push(
        &mut self,
        caller: &Principal,
        key: &DataKey,
        label: String,
        mut valid: ValidToken,
        fingerprint: String,
    ) -> Result<usize, VaultError> {
        // A CVC kept for no time is never sealed (docs/operations.md, "CVC retention").
        let now = timestamp::now();
        if self.cvc.is_past(now, now) {
            remove_cvc(valid.token_type, valid.data.expose_mut());
        }
        let (stored, token) =
            seal_new_token(caller, key, &valid, valid.id.first(), fingerprint.clone())?;
        self.rows.push(stored);
        self.tokens.push(token);
        self.asked.push(Asked {
            label,
            valid,
            fingerprint,
            draws: 1,
        });
        Ok(self.rows.len() - 1)
    }

    /// Seals token `i` again under its next id, or the 409 when its id was the caller's own.
    fn redraw(&mut self, i: usize, caller: &Principal, key: &DataKey) -> Result<(), VaultError> {
        let asked = &mut self.asked[i];
        let next = asked
            .valid
            .id
            .redraw(asked.draws, asked.valid.data.expose())
            .ok_or_else(|| taken(&self.rows[i].id, &asked.label))?;
        let (stored, token) =
            seal_new_token(caller, key, &asked.valid, next, asked.fingerprint.clone())?;
        asked.draws += 1;
        (self.rows[i], self.tokens[i]) = (stored, token);
        Ok(())
    }

    /// Draws again every drawn id that a chosen id, or an earlier drawn one, of the same
    /// request holds.
    fn settle_within(&mut self, caller: &Principal, key: &DataKey) -> Result<(), VaultError> {
        let mut seen: HashSet<TokenId> = self
            .rows
            .iter()
            .zip(&self.asked)
            .filter(|(_, a)| a.valid.id.is_chosen())
            .map(|(row, _)| row.id.clone())
            .collect();
        for i in 0..self.rows.len() {
            if self.asked[i].valid.id.is_chosen() {
                continue;
            }
            while seen.contains(&self.rows[i].id) {
                self.redraw(i, caller, key)?;
            }
            seen.insert(self.rows[i].id.clone());
        }
        Ok(())
    }

    /// The ids the callers asked for (chosen or drawn), which a conflict may be about.
    fn asked_ids(&self) -> Vec<TokenId> {
        self.rows
            .iter()
            .zip(&self.asked)
            .filter(|(_, a)| a.valid.id.is_asked())
            .map(|(row, _)| row.id.clone())
            .collect()
    }
}

impl Vault {
    /// Inserts `drawn` with `insert`, settling ids first within the request (a drawn id that
    /// repeats another is drawn again) and then against the tenant: on a conflict, the ids
    /// that are taken are looked up, a chosen one is a 409 naming it, and drawn ones are drawn
    /// again (at most [`ALIAS_DRAWS`] times, then a random UUID).
    pub(super) async fn insert_settled(
        &self,
        caller: &Principal,
        key: &DataKey,
        drawn: &mut Drawn,
        insert: impl AsyncFn(&[StoredToken]) -> Result<(), StoreError>,
    ) -> Result<(), VaultError> {
        drawn.settle_within(caller, key)?;
        for _ in 0..=ALIAS_DRAWS {
            let conflict = match insert(&drawn.rows).await {
                Ok(()) => return Ok(()),
                Err(StoreError::Conflict(message)) => message,
                Err(e) => return Err(e.into()),
            };
            let asked = drawn.asked_ids();
            let taken: HashSet<TokenId> = if asked.is_empty() {
                HashSet::new()
            } else {
                let rows = self.store.get_tokens(caller.tenant_id(), &asked).await?;
                rows.into_iter().map(|row| row.id).collect()
            };
            if taken.is_empty() {
                // Not an id after all (the tenant went away, say): as the store said.
                return Err(StoreError::Conflict(conflict).into());
            }
            // Every chosen id that is taken, named at once (an import resumes by skipping
            // them); then the drawn ones are drawn again.
            let chosen: Vec<(String, TokenId)> = drawn
                .rows
                .iter()
                .zip(&drawn.asked)
                .filter(|(row, a)| a.valid.id.is_chosen() && taken.contains(&row.id))
                .map(|(row, a)| (a.label.clone(), row.id.clone()))
                .collect();
            if !chosen.is_empty() {
                return Err(VaultError::IdsTaken(chosen));
            }
            for i in 0..drawn.rows.len() {
                if taken.contains(&drawn.rows[i].id) {
                    drawn.redraw(i, caller, key)?;
                }
            }
            drawn.settle_within(caller, key)?;
        }
        Err(VaultError::Conflict(
            "token ids kept being taken while they were drawn; retry".into(),
        ))
    }
}
