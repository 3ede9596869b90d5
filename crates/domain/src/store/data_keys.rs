//! Data-key versions and their re-encryption job, as stored (docs/operations.md, "Rotating data
//! keys").

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::ids::TenantId;

/// A later version (2, 3, …) of a tenant's data key, wrapped by the key-encrypting key.
#[derive(Clone)]
pub struct StoredKeyVersion {
    /// The version.
    pub version: u32,
    /// The key, wrapped.
    pub wrapped: Vec<u8>,
}

/// The version alone: wrapped keys stay out of logs.
impl std::fmt::Debug for StoredKeyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKeyVersion")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// Where the re-encryption job is: the tables it rewrites, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedTable {
    /// Token data and masks.
    Tokens,
    /// Proxies' configuration, key and transform code.
    Proxies,
    /// Console sessions' keys.
    ConsoleSessions,
    /// Stored idempotent answers: never rewritten (they expire within 24 h), only counted.
    IdempotentAnswers,
}

impl SealedTable {
    /// The tables the job rewrites, in its order.
    pub const REWRITTEN: [SealedTable; 3] = [
        SealedTable::Tokens,
        SealedTable::Proxies,
        SealedTable::ConsoleSessions,
    ];

    /// Every table holding rows sealed under a data key.
    pub const ALL: [SealedTable; 4] = [
        SealedTable::Tokens,
        SealedTable::Proxies,
        SealedTable::ConsoleSessions,
        SealedTable::IdempotentAnswers,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            SealedTable::Tokens => "tokens",
            SealedTable::Proxies => "proxies",
            SealedTable::ConsoleSessions => "console_sessions",
            SealedTable::IdempotentAnswers => "idempotency_keys",
        }
    }

    /// Parses the stored name; `done` is the end of the job.
    pub fn parse(s: &str) -> Option<Option<Self>> {
        match s {
            "done" => Some(None),
            other => Self::ALL
                .into_iter()
                .find(|t| t.as_str() == other)
                .map(Some),
        }
    }
}

/// One tenant's re-encryption job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataKeyJob {
    /// The tenant.
    pub tenant_id: TenantId,
    /// The version every row is moved to.
    pub target_version: u32,
    /// The table it is in; `None` once every table is done.
    pub stage: Option<SealedTable>,
    /// The last row key done in that table (rows are taken in key order).
    pub cursor: String,
    /// Rows re-encrypted so far.
    pub rows_done: u64,
    /// When the rotation started.
    pub started_at: OffsetDateTime,
    /// When it last moved.
    pub updated_at: OffsetDateTime,
    /// When it finished.
    pub finished_at: Option<OffsetDateTime>,
}

/// A row's sealed values, as the re-encryption reads and writes them.
#[derive(Debug, Clone)]
pub struct SealedRow {
    /// Its key in the tenant: a token's or proxy's id, a console session's id hash in hex, an
    /// idempotent answer's application id and key.
    pub key: String,
    /// A token's destinations (JSON), which its data is bound to.
    pub destinations: Option<String>,
    /// When the row last changed, where the table keeps it (tokens, proxies): a write is made
    /// only if it is unchanged.
    pub modified_at: Option<OffsetDateTime>,
    /// The sealed columns, in the table's order (tokens: data, mask; proxies: configuration,
    /// key, request transform, response transform; console sessions: key; idempotent answers:
    /// answer).
    pub values: Vec<Option<Vec<u8>>>,
}

/// Data-key versions, index keys, the job, and the rows it rewrites.
#[async_trait]
pub trait DataKeyStore: Send + Sync {
    /// `tenant`'s versions from 2 on, in order.
    async fn data_key_versions(
        &self,
        tenant: TenantId,
    ) -> Result<Vec<StoredKeyVersion>, StoreError>;
    /// In one transaction: adds `version` (wrapped), stores `index_keys` if the tenant has
    /// none, and starts `job` (replacing a finished one). `false` when the version exists or an
    /// unfinished job does (another rotation got there first).
    async fn add_data_key_version(
        &self,
        version: &StoredKeyVersion,
        index_keys: &Option<Vec<u8>>,
        job: &DataKeyJob,
    ) -> Result<bool, StoreError>;
    /// Replaces a version's wrapping (master-key rotation) if it is still `expected`.
    async fn replace_data_key_version(
        &self,
        tenant: TenantId,
        version: u32,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError>;
    /// Replaces the index keys' wrapping (master-key rotation) if it is still `expected`.
    async fn replace_index_keys(
        &self,
        tenant: TenantId,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool, StoreError>;
    /// Destroys `version`'s wrapped key (version 1: the tenant's first key becomes
    /// `RETIRED_FIRST_KEY`), and makes it unrecoverable from the database's files.
    async fn retire_data_key_version(
        &self,
        tenant: TenantId,
        version: u32,
    ) -> Result<bool, StoreError>;
    /// Every tenant's job (for the `/metrics` gauges: like the start-up reads of every
    /// tenant, not confined to one).
    async fn list_data_key_jobs(&self) -> Result<Vec<DataKeyJob>, StoreError>;
    /// `tenant`'s job, if any.
    async fn data_key_job(&self, tenant: TenantId) -> Result<Option<DataKeyJob>, StoreError>;
    /// Takes the unfinished job's lease for `owner` until `until`, if no other process holds
    /// it now. `false`: held elsewhere, or no unfinished job.
    async fn claim_data_key_job(
        &self,
        tenant: TenantId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Saves `job`'s progress and extends the lease, if `owner` still holds it.
    async fn save_data_key_job(
        &self,
        job: &DataKeyJob,
        owner: &str,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Up to `limit` of `tenant`'s rows of `table` whose key follows `after`, in key order.
    async fn sealed_rows(
        &self,
        tenant: TenantId,
        table: SealedTable,
        after: &str,
        limit: u32,
    ) -> Result<Vec<SealedRow>, StoreError>;
    /// Writes `values` over `row`'s sealed columns if the row is as `row` was read. `false`:
    /// changed since (left for the next pass).
    async fn replace_sealed(
        &self,
        tenant: TenantId,
        table: SealedTable,
        row: &SealedRow,
        values: &[Option<Vec<u8>>],
    ) -> Result<bool, StoreError>;
}
