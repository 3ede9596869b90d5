//! Row structs and their conversions to and from domain types.

use diesel::prelude::{Insertable, Queryable, Selectable};
use tessera_domain::{
    application::{Application, ApplicationKey, ApplicationType},
    proxy::name_search_key,
    store::{
        KeyedApplication, NewAssociation, StoreError, StoredApplicationKey, StoredProxy,
        StoredTenant, StoredToken,
    },
    ApiKeyHash, Container, Tenant, TokenType,
};
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

use crate::schema::{
    application_keys, applications, proxies, tenants, token_associations, token_metadata, tokens,
};

/// Stores a UTC instant as a naive `TIMESTAMP`.
pub(crate) fn to_db_time(ts: OffsetDateTime) -> PrimitiveDateTime {
    // Every instant the domain makes is UTC already (and `timestamp::parse` refuses the ones
    // that would leave years 1–9999 in UTC), so the fallback is never taken; it only keeps
    // this conversion from panicking.
    let utc = ts.checked_to_offset(UtcOffset::UTC).unwrap_or(ts);
    PrimitiveDateTime::new(utc.date(), utc.time())
}

fn from_db_time(ts: PrimitiveDateTime) -> OffsetDateTime {
    ts.assume_utc()
}

fn parse<T: std::str::FromStr>(what: &str, raw: &str) -> Result<T, StoreError> {
    raw.parse()
        .map_err(|_| StoreError::Corrupt(format!("invalid {what} `{raw}`")))
}

fn json<T: serde::de::DeserializeOwned>(what: &str, raw: &str) -> Result<T, StoreError> {
    serde_json::from_str(raw).map_err(|e| StoreError::Corrupt(format!("invalid {what}: {e}")))
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serialising plain maps, vectors and enums into a String cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = tenants)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct TenantRow {
    pub tenant_id: String,
    pub name: String,
    pub wrapped_data_key: Vec<u8>,
    pub created_at: PrimitiveDateTime,
}

impl From<&StoredTenant> for TenantRow {
    fn from(t: &StoredTenant) -> Self {
        Self {
            tenant_id: t.tenant.id.to_string(),
            name: t.tenant.name.clone(),
            wrapped_data_key: t.wrapped_data_key.clone(),
            created_at: to_db_time(t.tenant.created_at),
        }
    }
}

impl TryFrom<TenantRow> for StoredTenant {
    type Error = StoreError;

    fn try_from(r: TenantRow) -> Result<Self, StoreError> {
        Ok(StoredTenant {
            tenant: Tenant {
                id: parse("tenant id", &r.tenant_id)?,
                name: r.name,
                created_at: from_db_time(r.created_at),
            },
            wrapped_data_key: r.wrapped_data_key,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = applications)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct ApplicationRow {
    pub tenant_id: String,
    pub id: String,
    pub name: String,
    pub app_type: String,
    pub permissions: String,
    pub rules: String,
    pub created_by: String,
    pub created_at: PrimitiveDateTime,
    pub modified_by: String,
    pub modified_at: PrimitiveDateTime,
    pub expires_at: Option<PrimitiveDateTime>,
    pub allowed_origins: String,
}

impl From<&Application> for ApplicationRow {
    fn from(a: &Application) -> Self {
        Self {
            tenant_id: a.tenant_id.to_string(),
            id: a.id.to_string(),
            name: a.name.clone(),
            app_type: a.app_type.as_str().to_string(),
            permissions: to_json(&a.permissions),
            rules: to_json(&a.rules),
            created_by: a.created_by.to_string(),
            created_at: to_db_time(a.created_at),
            modified_by: a.modified_by.to_string(),
            modified_at: to_db_time(a.modified_at),
            expires_at: a.expires_at.map(to_db_time),
            allowed_origins: to_json(&a.allowed_origins),
        }
    }
}

impl ApplicationRow {
    /// The application holding `key` (read with it by its hash).
    pub(crate) fn into_keyed(self, key: ApplicationKeyRow) -> Result<KeyedApplication, StoreError> {
        Ok(KeyedApplication {
            application: self.into_application()?,
            key: key.into_stored()?,
        })
    }

    pub(crate) fn into_application(self) -> Result<Application, StoreError> {
        Ok(Application {
            id: parse("application id", &self.id)?,
            tenant_id: parse("tenant id", &self.tenant_id)?,
            name: self.name,
            app_type: ApplicationType::parse(&self.app_type).ok_or_else(|| {
                StoreError::Corrupt(format!("invalid application type `{}`", self.app_type))
            })?,
            permissions: json("permissions", &self.permissions)?,
            rules: json("rules", &self.rules)?,
            created_by: parse("application id", &self.created_by)?,
            created_at: from_db_time(self.created_at),
            modified_by: parse("application id", &self.modified_by)?,
            modified_at: from_db_time(self.modified_at),
            expires_at: self.expires_at.map(from_db_time),
            allowed_origins: json("allowed origins", &self.allowed_origins)?,
            keys: Vec::new(),
        })
    }
}

/// One key of an application: its metadata and the SHA-256 of the key.
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = application_keys)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct ApplicationKeyRow {
    pub tenant_id: String,
    pub application_id: String,
    pub id: String,
    pub key_hash: Vec<u8>,
    pub created_by: String,
    pub created_at: PrimitiveDateTime,
}

impl From<&StoredApplicationKey> for ApplicationKeyRow {
    fn from(s: &StoredApplicationKey) -> Self {
        Self {
            tenant_id: s.tenant_id.to_string(),
            application_id: s.key.application_id.to_string(),
            id: s.key.id.to_string(),
            key_hash: s.key_hash.as_bytes().to_vec(),
            created_by: s.key.created_by.to_string(),
            created_at: to_db_time(s.key.created_at),
        }
    }
}

impl ApplicationKeyRow {
    /// The key as stored, its hash included.
    pub(crate) fn into_stored(self) -> Result<StoredApplicationKey, StoreError> {
        let key_hash = ApiKeyHash::from_bytes(&self.key_hash)
            .ok_or_else(|| StoreError::Corrupt("key hash is not 32 bytes".into()))?;
        Ok(StoredApplicationKey {
            tenant_id: parse("tenant id", &self.tenant_id)?,
            key: self.into_key()?,
            key_hash,
        })
    }

    /// The key's metadata.
    pub(crate) fn into_key(self) -> Result<ApplicationKey, StoreError> {
        Ok(ApplicationKey {
            id: parse("application key id", &self.id)?,
            application_id: parse("application id", &self.application_id)?,
            created_by: parse("application id", &self.created_by)?,
            created_at: from_db_time(self.created_at),
        })
    }
}

/// Serialised permissions and rules for an update statement.
pub(crate) fn application_grants(a: &Application) -> (String, String) {
    (to_json(&a.permissions), to_json(&a.rules))
}

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
        })
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
        Self::pairs(t.tenant_id, t.id, t.created_at, &t.metadata)
    }

    /// The rows of `metadata` for token `id` created at `created_at`.
    pub(crate) fn pairs(
        tenant: tessera_domain::TenantId,
        id: tessera_domain::TokenId,
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

#[derive(Insertable)]
#[diesel(table_name = token_associations)]
pub(crate) struct AssociationRow {
    pub tenant_id: String,
    pub parent_id: String,
    pub child_id: String,
    pub child_created_at: PrimitiveDateTime,
    pub child_type: String,
    pub created_at: PrimitiveDateTime,
}

impl From<&NewAssociation> for AssociationRow {
    fn from(a: &NewAssociation) -> Self {
        Self {
            tenant_id: a.tenant_id.to_string(),
            parent_id: a.parent_id.to_string(),
            child_id: a.child_id.to_string(),
            child_created_at: to_db_time(a.child_created_at),
            child_type: a.child_type.as_str().to_string(),
            created_at: to_db_time(a.created_at),
        }
    }
}

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
