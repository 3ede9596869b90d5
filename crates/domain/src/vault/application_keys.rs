//! An application's keys (docs/api.md, "Application keys"): up to a few live at once, each
//! added, listed, read and revoked on its own, so a key can be rotated without downtime.

use time::OffsetDateTime;

use crate::{
    access::Principal,
    api_key::ApiKey,
    application::{Application, ApplicationKey, MAX_KEYS},
    error::{Resource, VaultError},
    ids::{ApplicationId, ApplicationKeyId},
    permission::Permission,
    store::{KeyAdded, StoredApplicationKey},
    timestamp,
};

use super::Vault;

/// A key just added to an application; the only time the key is visible.
#[derive(Debug)]
pub struct NewApplicationKey {
    /// Its metadata.
    pub key: ApplicationKey,
    /// The key.
    pub api_key: ApiKey,
}

/// A fresh key for `app`, issued by `created_by` at `now`: the key, and what is stored of it.
pub(super) fn new_key(
    app: &Application,
    created_by: ApplicationId,
    now: OffsetDateTime,
) -> (ApiKey, StoredApplicationKey) {
    let api_key = ApiKey::generate();
    let stored = StoredApplicationKey {
        tenant_id: app.tenant_id,
        key: ApplicationKey {
            id: ApplicationKeyId::new(),
            application_id: app.id,
            created_by,
            created_at: now,
        },
        key_hash: api_key.hash(),
    };
    (api_key, stored)
}

impl Vault {
    /// Adds a key to an application (`application:update`); the only time it is shown. Like
    /// [`Vault::regenerate_application_key`], the caller must hold every grant of the
    /// application. At most [`MAX_KEYS`] keys live at once (409 beyond).
    pub async fn create_application_key(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<NewApplicationKey, VaultError> {
        caller.require(Permission::ApplicationUpdate)?;
        let application = self.managed_application(caller, id).await?;
        let (api_key, stored) = new_key(&application, caller.application_id(), timestamp::now());
        match self.store.insert_application_key(&stored, MAX_KEYS).await? {
            KeyAdded::Added => Ok(NewApplicationKey {
                key: stored.key,
                api_key,
            }),
            KeyAdded::Full => Err(VaultError::Conflict(format!(
                "the application holds {MAX_KEYS} keys, the most it may; revoke one first"
            ))),
            // Deleted since it was read.
            KeyAdded::NoApplication => Err(VaultError::NotFound(Resource::Application)),
        }
    }

    /// The keys of an application (`application:read`), oldest first, never the keys
    /// themselves.
    pub async fn application_keys(
        &self,
        caller: &Principal,
        id: ApplicationId,
    ) -> Result<Vec<ApplicationKey>, VaultError> {
        caller.require(Permission::ApplicationRead)?;
        Ok(self.application_with_keys(caller, id).await?.keys)
    }

    /// One key of an application (`application:read`), never the key itself.
    pub async fn application_key(
        &self,
        caller: &Principal,
        id: ApplicationId,
        key_id: ApplicationKeyId,
    ) -> Result<ApplicationKey, VaultError> {
        self.application_keys(caller, id)
            .await?
            .into_iter()
            .find(|k| k.id == key_id)
            .ok_or(VaultError::NotFound(Resource::ApplicationKey))
    }

    /// Revokes one key of an application (`application:update`, and every grant of the
    /// application, as for issuing one); it stops working at once in this process, and
    /// within the cache TTL in others.
    pub async fn revoke_application_key(
        &self,
        caller: &Principal,
        id: ApplicationId,
        key_id: ApplicationKeyId,
    ) -> Result<(), VaultError> {
        caller.require(Permission::ApplicationUpdate)?;
        self.managed_application(caller, id).await?;
        if !self
            .store
            .delete_application_key(caller.tenant_id(), id, key_id)
            .await?
        {
            return Err(VaultError::NotFound(Resource::ApplicationKey));
        }
        self.forget_application(id);
        Ok(())
    }
}
