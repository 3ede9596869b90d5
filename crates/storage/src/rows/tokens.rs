//! Token and token-metadata rows.

use diesel::prelude::{Insertable, Queryable, Selectable};
use tessera_domain::{
    store::{StoreError, StoredToken},
    Container, TokenType,
};
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::schema::{token_metadata, token_search_index, tokens};

use super::{from_db_time, json, parse, to_db_time, to_json};

/// `None` is written as NULL (`treat_none_as_default_value = false`): the INSERT's text is then
/// the same for every row, so it is prepared once per connection and rows batch into one
/// statement.
#[derive(Queryable, diesel::QueryableByName, Selectable, Insertable)]
#[diesel(table_name = tokens)]
#[diesel(treat_none_as_default_value = false)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct TokenRow {
    pub tenant_id: String,
    pub id: String,
    pub token_type: String,
    pub container: String,
    pub metadata: String,
    pub data_ciphertext: Vec<u8>,
    pub created_by: String,
    pub created_at: PrimitiveDateTime,
    pub modified_by: String,
    pub modified_at: PrimitiveDateTime,
    pub expires_at: Option<PrimitiveDateTime>,
    pub fingerprint: String,
    pub destinations: Option<String>,
    pub search_indexes: Option<String>,
    pub fingerprint_expression: Option<String>,
    pub holds_cvc: bool,
    pub mask_ciphertext: Option<Vec<u8>>,
}

impl From<&StoredToken> for TokenRow {
    fn from(t: &StoredToken) -> Self {
        Self {
            tenant_id: t.tenant_id.to_string(),
            id: t.id.to_string(),
            token_type: t.token_type.as_str().to_string(),
            container: t.container.as_str().to_string(),
            metadata: to_json(&t.metadata),
            data_ciphertext: t.ciphertext.clone(),
            created_by: t.created_by.to_string(),
            created_at: to_db_time(t.created_at),
            modified_by: t.modified_by.to_string(),
            modified_at: to_db_time(t.modified_at),
            expires_at: t.expires_at.map(to_db_time),
            fingerprint: t.fingerprint.clone(),
            destinations: t.destinations.as_ref().map(|d| d.to_json()),
            search_indexes: t.search_indexes.as_ref().map(to_json),
            fingerprint_expression: t.fingerprint_expression.clone(),
            holds_cvc: t.holds_cvc,
            mask_ciphertext: t.mask.clone(),
        }
    }
}

impl TryFrom<TokenRow> for StoredToken {
    type Error = StoreError;

    fn try_from(r: TokenRow) -> Result<Self, StoreError> {
        Ok(StoredToken {
            id: parse("token id", &r.id)?,
            tenant_id: parse("tenant id", &r.tenant_id)?,
            token_type: TokenType::parse(&r.token_type).ok_or_else(|| {
                StoreError::Corrupt(format!("invalid token type `{}`", r.token_type))
            })?,
            container: Container::parse(&r.container)
                .map_err(|_| StoreError::Corrupt(format!("invalid container `{}`", r.container)))?,
            metadata: json("metadata", &r.metadata)?,
            ciphertext: r.data_ciphertext,
            created_by: parse("application id", &r.created_by)?,
            created_at: from_db_time(r.created_at),
            modified_by: parse("application id", &r.modified_by)?,
            modified_at: from_db_time(r.modified_at),
            expires_at: r.expires_at.map(from_db_time),
            fingerprint: r.fingerprint,
            destinations: r
                .destinations
                .as_deref()
                .map(|d| json::<tessera_domain::binding::Destinations>("destinations", d))
                .transpose()?,
            search_indexes: r
                .search_indexes
                .as_deref()
                .map(|s| json::<Vec<String>>("search indexes", s))
                .transpose()?,
            fingerprint_expression: r.fingerprint_expression,
            search_hashes: Vec::new(),
            holds_cvc: r.holds_cvc,
            mask: r.mask_ciphertext,
        })
    }
}

/// One search index value of a token, as its keyed hash, beside the token's container (so that
/// a search's container scope is applied within the index).
#[derive(Insertable)]
#[diesel(table_name = token_search_index)]
pub(crate) struct TokenSearchRow {
    pub tenant_id: String,
    pub hash: Vec<u8>,
    pub container: String,
    pub token_id: String,
}

impl TokenSearchRow {
    /// The rows of `t`'s search index hashes.
    pub(crate) fn for_token(t: &StoredToken) -> Vec<Self> {
        Self::hashes(t.tenant_id, &t.id, &t.container, &t.search_hashes)
    }

    /// The rows of `hashes` for token `id` in `container`.
    pub(crate) fn hashes(
        tenant: tessera_domain::TenantId,
        id: &tessera_domain::TokenId,
        container: &Container,
        hashes: &[tessera_domain::store::SearchHash],
    ) -> Vec<Self> {
        let (tenant, id, container) = (tenant.to_string(), id.to_string(), container.as_str());
        hashes
            .iter()
            .map(|h| Self {
                tenant_id: tenant.clone(),
                hash: h.to_vec(),
                container: container.to_string(),
                token_id: id.clone(),
            })
            .collect()
    }
}

/// `None` is written as NULL, as for [`TokenRow`].
#[derive(Insertable)]
#[diesel(table_name = token_metadata)]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct TokenMetadataRow {
    pub tenant_id: String,
    pub token_id: String,
    pub key: String,
    pub value: String,
    /// The token's `created_at` (for searches by pair, newest first).
    pub created_at: Option<PrimitiveDateTime>,
}

impl TokenMetadataRow {
    pub(crate) fn for_token(t: &StoredToken) -> Vec<Self> {
        Self::pairs(t.tenant_id, &t.id, t.created_at, &t.metadata)
    }

    /// The rows of `metadata` for token `id` created at `created_at`.
    pub(crate) fn pairs(
        tenant: tessera_domain::TenantId,
        id: &tessera_domain::TokenId,
        created_at: OffsetDateTime,
        metadata: &tessera_domain::metadata::Metadata,
    ) -> Vec<Self> {
        let (tenant, id, created_at) = (tenant.to_string(), id.to_string(), to_db_time(created_at));
        metadata
            .iter()
            .map(|(k, v)| Self {
                tenant_id: tenant.clone(),
                token_id: id.clone(),
                key: k.clone(),
                value: v.clone(),
                created_at: Some(created_at),
            })
            .collect()
    }
}
