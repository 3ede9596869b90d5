//! Application and application-key rows.

use diesel::prelude::{Insertable, Queryable, Selectable};
use tessera_domain::{
    application::{Application, ApplicationKey, ApplicationType},
    store::{KeyedApplication, StoreError, StoredApplicationKey},
    ApiKeyHash,
};
use time::PrimitiveDateTime;

use crate::schema::{application_keys, applications};

use super::{from_db_time, json, parse, to_db_time, to_json};

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
