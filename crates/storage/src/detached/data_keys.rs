//! Data-key versions and their re-encryption job: [`DataKeyStore`] on
//! [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{
    DataKeyJob, DataKeyStore, SealedRow, SealedTable, StoreError, StoredKeyVersion,
};
use tessera_domain::TenantId;
use time::OffsetDateTime;

detached! {
    DataKeyStore {
        spawned fn data_key_versions(tenant: TenantId) -> Vec<StoredKeyVersion>;
        spawned fn add_data_key_version(version: &StoredKeyVersion, index_keys: &Option<Vec<u8>>, job: &DataKeyJob) -> bool;
        spawned fn replace_data_key_version(tenant: TenantId, version: u32, expected: &[u8], new: &[u8]) -> bool;
        spawned fn replace_index_keys(tenant: TenantId, expected: &[u8], new: &[u8]) -> bool;
        spawned fn retire_data_key_version(tenant: TenantId, version: u32) -> bool;
        spawned fn list_data_key_jobs() -> Vec<DataKeyJob>;
        spawned fn data_key_job(tenant: TenantId) -> Option<DataKeyJob>;
        spawned fn claim_data_key_job(tenant: TenantId, owner: &str, now: OffsetDateTime, until: OffsetDateTime) -> bool;
        spawned fn save_data_key_job(job: &DataKeyJob, owner: &str, until: OffsetDateTime) -> bool;
        spawned fn sealed_rows(tenant: TenantId, table: SealedTable, after: &str, limit: u32) -> Vec<SealedRow>;
        spawned fn replace_sealed(tenant: TenantId, table: SealedTable, row: &SealedRow, values: &[Option<Vec<u8>>]) -> bool;
    }
}
