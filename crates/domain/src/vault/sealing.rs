//! A token's data at rest: sealed under the tenant's data key, bound to the tenant, the token
//! and its destinations, and opened again (a card's CVC past its retention removed on the
//! way out).

use serde_json::Value;

use crate::{
    error::{StoreError, VaultError},
    ids::TokenId,
    secret::Secret,
    store::StoredToken,
    token::{fingerprint_input, Token},
};

/// Decrypts a stored token. A card's CVC past `cvc` is gone from the data whether or not the
/// sweep has sealed it again without it, and whatever the row's mark says (docs/operations.md,
/// "CVC retention").
pub(super) fn decrypt_with(
    key: &crate::crypto::DataKey,
    cvc: crate::token::CvcRetention,
    stored: StoredToken,
) -> Result<Token, VaultError> {
    let mut data = open_data(key, &stored)?;
    // Decided from the sealed data and the creation time, not from the row's `holds_cvc` mark:
    // a mark cleared directly in the database stops the sweep, never shows a CVC to a reader.
    if stored.token_type == crate::token::TokenType::Card
        && cvc.is_past(stored.created_at, crate::timestamp::now())
    {
        crate::token::remove_cvc(stored.token_type, &mut data);
    }
    // A row from before fingerprints that start-up has not reached yet: computed here.
    let fingerprint = if stored.fingerprint.is_empty() {
        key.fingerprint(&fingerprint_input(stored.token_type, &data))
    } else {
        stored.fingerprint
    };
    let mask = stored
        .mask
        .as_deref()
        .map(|sealed| crate::token::open_mask(key, stored.tenant_id, &stored.id, sealed))
        .transpose()?;
    Ok(Token {
        id: stored.id,
        tenant_id: stored.tenant_id,
        token_type: stored.token_type,
        data: Secret::new(data),
        metadata: stored.metadata,
        container: stored.container,
        created_by: stored.created_by,
        created_at: stored.created_at,
        modified_by: stored.modified_by,
        modified_at: stored.modified_at,
        fingerprint,
        expires_at: stored.expires_at,
        destinations: stored.destinations,
        search_indexes: stored.search_indexes,
        fingerprint_expression: stored.fingerprint_expression,
        mask,
    })
}

/// Seals a token's `data` as it is stored: its JSON text under the tenant's data key, bound to
/// the tenant, the token and its `destinations` (the twin of [`open_data`]).
pub(super) fn seal_data(
    key: &crate::crypto::DataKey,
    tenant: crate::ids::TenantId,
    id: &TokenId,
    destinations: Option<&crate::binding::Destinations>,
    data: &Value,
) -> Result<Vec<u8>, VaultError> {
    let plaintext = Secret::new(
        serde_json::to_vec(data)
            .map_err(|e| StoreError::Backend(format!("serialising token data: {e}")))?,
    );
    Ok(key.seal_token(
        tenant,
        id,
        &crate::binding::sealed_form(destinations),
        plaintext.expose(),
    )?)
}

/// A stored token's data as sealed, nothing removed.
pub(super) fn open_data(
    key: &crate::crypto::DataKey,
    stored: &StoredToken,
) -> Result<Value, VaultError> {
    let plaintext = key.open_token(
        stored.tenant_id,
        &stored.id,
        &crate::binding::sealed_form(stored.destinations.as_ref()),
        &stored.ciphertext,
    )?;
    serde_json::from_slice(&plaintext)
        .map_err(|_| StoreError::Corrupt(format!("token {} data is not JSON", stored.id)).into())
}
