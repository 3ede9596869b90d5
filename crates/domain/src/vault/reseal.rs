//! One row sealed again under its tenant's current data-key version (docs/operations.md,
//! "Rotating data keys"): each table's sealed columns with the additional data each was sealed
//! with (the tenant, the row and the purpose), so that a re-encrypted row opens exactly as
//! before, for the same row only.

use crate::{
    binding::Destinations,
    crypto::{CryptoError, DataKey},
    error::VaultError,
    hex,
    ids::{TenantId, TokenId},
    store::{SealedRow, SealedTable, StoreError},
};

use super::{console_sessions, proxy_secrets::SEALED_COLUMN_PURPOSES};

/// `row`'s sealed columns under `key`'s current version, or `None` when every one already is.
pub(super) fn resealed(
    key: &DataKey,
    tenant: TenantId,
    table: SealedTable,
    row: &SealedRow,
) -> Result<Option<Vec<Option<Vec<u8>>>>, VaultError> {
    let moved: Vec<Option<Vec<u8>>> = match table {
        SealedTable::Tokens => token(key, tenant, row)?,
        SealedTable::Proxies => row
            .values
            .iter()
            .zip(SEALED_COLUMN_PURPOSES)
            .map(|(value, purpose)| {
                value
                    .as_deref()
                    .map(|v| key.reseal_record(tenant, purpose, row.key.as_bytes(), v))
                    .transpose()
                    .map(Option::flatten)
            })
            .collect::<Result<_, CryptoError>>()?,
        SealedTable::ConsoleSessions => {
            let id_hash = hex::decode(&row.key)
                .map_err(|_| StoreError::Corrupt("a console session's id hash".into()))?;
            row.values
                .iter()
                .map(|value| {
                    value
                        .as_deref()
                        .map(|v| {
                            key.reseal_record(tenant, console_sessions::KEY_PURPOSE, &id_hash, v)
                        })
                        .transpose()
                        .map(Option::flatten)
                })
                .collect::<Result<_, CryptoError>>()?
        }
        SealedTable::IdempotentAnswers => return Ok(None),
    };
    if moved.iter().all(Option::is_none) {
        return Ok(None);
    }
    Ok(Some(
        moved
            .into_iter()
            .zip(&row.values)
            .map(|(new, old)| new.or_else(|| old.clone()))
            .collect(),
    ))
}

/// A token's data (bound to its destinations) and mask, sealed again.
fn token(
    key: &DataKey,
    tenant: TenantId,
    row: &SealedRow,
) -> Result<Vec<Option<Vec<u8>>>, VaultError> {
    let id: TokenId = row
        .key
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("token id `{}`", row.key)))?;
    let destinations: Option<Destinations> = row
        .destinations
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("token {id}'s destinations: {e}")))?;
    let binding = crate::binding::sealed_form(destinations.as_ref());
    let data = row
        .values
        .first()
        .cloned()
        .flatten()
        .map(|data| key.reseal_token(tenant, &id, &binding, &data))
        .transpose()?
        .flatten();
    let mask = row
        .values
        .get(1)
        .cloned()
        .flatten()
        .map(|mask| crate::token::reseal_mask(key, tenant, &id, &mask))
        .transpose()?
        .flatten();
    Ok(vec![data, mask])
}
