//! Proxy rows, as read and as inserted.

use diesel::prelude::{Insertable, Queryable, Selectable};
use tessera_domain::{
    proxy::name_search_key,
    store::{StoreError, StoredProxy},
};
use time::PrimitiveDateTime;

use crate::schema::proxies;

use super::{from_db_time, parse, to_db_time};

#[derive(Queryable, Selectable)]
#[diesel(table_name = proxies)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct ProxyRow {
    pub tenant_id: String,
    pub id: String,
    pub name: String,
    pub destination_url: String,
    pub application_id: Option<String>,
    pub configuration: Option<Vec<u8>>,
    pub require_auth: bool,
    pub created_by: String,
    pub created_at: PrimitiveDateTime,
    pub modified_by: String,
    pub modified_at: PrimitiveDateTime,
    pub key_lookup: Option<Vec<u8>>,
    pub key_sealed: Option<Vec<u8>>,
    pub request_transform_sealed: Option<Vec<u8>>,
    pub response_transform_sealed: Option<Vec<u8>>,
}

/// What a new proxy row holds: sealed secrets only (the clear legacy columns stay NULL).
#[derive(Insertable)]
#[diesel(table_name = proxies)]
pub(crate) struct NewProxyRow {
    pub tenant_id: String,
    pub id: String,
    pub name: String,
    pub name_search: String,
    pub destination_url: String,
    pub application_id: Option<String>,
    pub configuration: Option<Vec<u8>>,
    pub require_auth: bool,
    pub created_by: String,
    pub created_at: PrimitiveDateTime,
    pub modified_by: String,
    pub modified_at: PrimitiveDateTime,
    pub key_lookup: Vec<u8>,
    pub key_sealed: Vec<u8>,
    pub request_transform_sealed: Option<Vec<u8>>,
    pub response_transform_sealed: Option<Vec<u8>>,
}

impl From<&StoredProxy> for NewProxyRow {
    fn from(p: &StoredProxy) -> Self {
        Self {
            tenant_id: p.tenant_id.to_string(),
            id: p.id.to_string(),
            name: p.name.clone(),
            name_search: name_search_key(&p.name),
            destination_url: p.destination_url.clone(),
            application_id: p.application_id.map(|a| a.to_string()),
            configuration: p.configuration_ciphertext.clone(),
            require_auth: p.require_auth,
            created_by: p.created_by.to_string(),
            created_at: to_db_time(p.created_at),
            modified_by: p.modified_by.to_string(),
            modified_at: to_db_time(p.modified_at),
            key_lookup: p.key_lookup.to_vec(),
            key_sealed: p.key_sealed.clone(),
            request_transform_sealed: p.request_transform_sealed.clone(),
            response_transform_sealed: p.response_transform_sealed.clone(),
        }
    }
}

impl TryFrom<ProxyRow> for StoredProxy {
    type Error = StoreError;

    fn try_from(r: ProxyRow) -> Result<Self, StoreError> {
        let unsealed = || StoreError::Corrupt(format!("proxy {} has no sealed key yet", r.id));
        let key_lookup = r
            .key_lookup
            .as_deref()
            .and_then(|l| <[u8; 32]>::try_from(l).ok())
            .ok_or_else(unsealed)?;
        let key_sealed = r.key_sealed.clone().ok_or_else(unsealed)?;
        Ok(StoredProxy {
            id: parse("proxy id", &r.id)?,
            tenant_id: parse("tenant id", &r.tenant_id)?,
            name: r.name,
            key_lookup,
            key_sealed,
            destination_url: r.destination_url,
            request_transform_sealed: r.request_transform_sealed,
            response_transform_sealed: r.response_transform_sealed,
            application_id: r
                .application_id
                .as_deref()
                .map(|a| parse("application id", a))
                .transpose()?,
            configuration_ciphertext: r.configuration,
            require_auth: r.require_auth,
            created_by: parse("application id", &r.created_by)?,
            created_at: from_db_time(r.created_at),
            modified_by: parse("application id", &r.modified_by)?,
            modified_at: from_db_time(r.modified_at),
        })
    }
}
