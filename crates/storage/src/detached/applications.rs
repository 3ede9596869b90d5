//! Applications and their keys: [`ApplicationStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::application::{Application, ApplicationKey};
use tessera_domain::store::{
    ApplicationFilter, ApplicationStore, KeyAdded, KeyedApplication, StoreError, StoredApplication,
    StoredApplicationKey,
};
use tessera_domain::{ApiKeyHash, ApplicationId, ApplicationKeyId, Page, PageRequest, TenantId};
use time::OffsetDateTime;

detached! {
    ApplicationStore {
        spawned fn insert_application(app: &StoredApplication) -> ();
        caller fn get_application(tenant: TenantId, id: ApplicationId) -> Option<Application>;
        caller fn find_application_by_key_hash(hash: &ApiKeyHash) -> Option<KeyedApplication>;
        spawned fn list_applications(tenant: TenantId, filter: &ApplicationFilter, page: PageRequest) -> Page<Application>;
        spawned fn update_application(app: &Application) -> bool;
        spawned fn replace_application_keys(key: &StoredApplicationKey, modified_by: ApplicationId, modified_at: OffsetDateTime) -> bool;
        spawned fn delete_application(tenant: TenantId, id: ApplicationId) -> bool;
        spawned fn insert_application_key(key: &StoredApplicationKey, max: usize) -> KeyAdded;
        spawned fn list_application_keys(tenant: TenantId, apps: &[ApplicationId]) -> Vec<ApplicationKey>;
        spawned fn delete_application_key(tenant: TenantId, app: ApplicationId, id: ApplicationKeyId) -> bool;
    }
}
