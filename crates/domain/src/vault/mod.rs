//! The use-cases: everything a caller can do, with permission checks, validation and
//! encryption applied. HTTP handlers and embedding programs both go through [`Vault`].

mod application_keys;
mod applications;
mod associations;
mod audit;
mod bulk_create;
mod caches;
mod console_sessions;
mod cvc_sweep;
mod data_key_rotation;
mod gateway;
mod idempotency;
mod keyring;
mod new_tokens;
mod proxies;
mod proxy_secrets;
mod reseal;
mod sealing;
mod sweep;
mod tenant_deletion;
mod tenants;
mod token_search;
mod token_update;
mod token_walk;
mod tokens;
mod webhook_signing;
mod webhooks;

use std::{sync::Arc, time::Duration};

pub use application_keys::NewApplicationKey;
pub use applications::{CreatedApplication, IssuedKey};
pub use associations::MAX_PARENTS;
pub use bulk_create::MAX_BULK;
pub use caches::CachesUsage;
pub use console_sessions::{
    random_token, session_csrf, session_id_hash, tokens_match, ConsoleSession, SessionLimits,
    SessionLookup,
};
pub use data_key_rotation::{DataKeyStatus, JobSettings};
pub use gateway::{SealedTokens, TokenSize};
pub use idempotency::{
    validate_key as validate_idempotency_key, IdempotencyClaim, IdempotencyTicket,
    IdempotentRequest, ReplayedResponse, IDEMPOTENCY_WINDOW,
    MAX_KEY_LEN as MAX_IDEMPOTENCY_KEY_LEN,
};
pub use sweep::SweepReport;
pub use tenant_deletion::TenantDeletion;
pub use tenants::CreatedTenant;

use crate::{
    access::Principal,
    api_key::ApiKey,
    audit::{Actor, AuditAction, AuditEvent},
    cache::{LookupCache, TtlCache, DEFAULT_TTL},
    crypto::MasterKey,
    custody::{KeyCustody, WrapPurpose},
    error::VaultError,
    ids::{ApplicationId, ProxyId, TenantId, TokenId},
    proxy::{DestinationPolicy, Proxy},
    secret::Secret,
    store::{Store, StoredTenant, StoredToken},
};
use keyring::Keyring;

/// The answer to a key that is unknown, revoked, or of another tenant than required.
const UNKNOWN_KEY: &str = "the API key is unknown or has been revoked";

/// The vault: use-cases over a [`Store`], holding the master key.
///
/// Cheap to clone (everything inside is shared), so one instance serves every request.
#[derive(Clone)]
pub struct Vault {
    store: Arc<dyn Store>,
    keys: Arc<Keyring>,
    destinations: DestinationPolicy,
    /// Presented API key → caller (or unknown key, under a budget of its own). Keyed by the
    /// key itself, in memory only (a `Secret`, wiped when evicted), so that a hit costs no
    /// SHA-256; the store is searched by the key's hash.
    api_keys: Arc<LookupCache<Secret<String>, Principal>>,
    /// Presented proxy key → proxy (or unknown key, under a budget of its own). Keyed by the
    /// key itself, in memory only (a `Secret`), so a hit costs no HMAC; the store is searched
    /// by the key's lookup hash. Only well-formed keys are looked up.
    proxies: Arc<LookupCache<Secret<String>, Arc<Proxy>>>,
    /// Token rows used by the gateway, *encrypted*: plaintext is never cached.
    token_rows: Arc<TtlCache<(TenantId, TokenId), StoredToken>>,
    /// Application → principal, for transforms acting as a proxy's application (`req.svc`).
    applications: Arc<TtlCache<(TenantId, ApplicationId), Principal>>,
    /// Where the edges record audit events (off unless [`Vault::with_audit`]).
    audit: crate::audit::AuditLog,
    /// How long audit events are kept ([`Vault::sweep`] removes older ones); `None`: forever.
    audit_retention: Option<time::Duration>,
    /// Compiles proxies' transforms when they are created or updated (none: not checked,
    /// until [`Vault::with_transform_check`]).
    transform_check: Option<Arc<dyn crate::transform_check::TransformCheck>>,
    /// What permissions granted without rules show of token data
    /// ([`Vault::with_implicit_transform`]).
    implicit: crate::data_transform::DataTransform,
    /// How long a card's CVC is kept after the token's creation ([`Vault::with_cvc_retention`]).
    cvc: crate::token::CvcRetention,
    /// Webhook signing keys unwrapped so far.
    signing: Arc<webhook_signing::SigningKeys>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").finish_non_exhaustive()
    }
}

impl Vault {
    /// A vault over `store`, encrypting with data keys wrapped by `master_key`.
    pub fn new(store: Arc<dyn Store>, master_key: MasterKey) -> Self {
        Self::with_master_keys(store, master_key, Vec::new())
    }

    /// As [`Vault::new`], during a master-key rotation: data keys still wrapped by one of the
    /// `previous` keys are read with it; new tenants and [`Vault::rotate_master_key`] use
    /// `master_key`.
    pub fn with_master_keys(
        store: Arc<dyn Store>,
        master_key: MasterKey,
        previous: Vec<MasterKey>,
    ) -> Self {
        let previous = previous
            .into_iter()
            .map(|k| Arc::new(k) as Arc<dyn KeyCustody>)
            .collect();
        Self::with_custody(store, Arc::new(master_key), previous)
    }

    /// What holds the key-encrypting key (`file`, a PKCS#11 token and key label, …), for
    /// start-up logs and reports; never secret.
    pub fn key_custody(&self) -> String {
        self.keys.describe()
    }

    /// A vault whose key-encrypting key is held by `custody` (a file, an HSM, a KMS); during a
    /// move between custodies, keys still wrapped by one of `previous` are read with it, and
    /// [`Vault::rotate_master_key`] re-wraps them by `custody`.
    pub fn with_custody(
        store: Arc<dyn Store>,
        custody: Arc<dyn KeyCustody>,
        previous: Vec<Arc<dyn KeyCustody>>,
    ) -> Self {
        Self {
            keys: Arc::new(Keyring::new(custody, previous)),
            store,
            destinations: DestinationPolicy::default(),
            api_keys: caches::api_keys(DEFAULT_TTL),
            proxies: caches::proxies(DEFAULT_TTL),
            token_rows: caches::token_rows(DEFAULT_TTL),
            applications: caches::applications(DEFAULT_TTL),
            audit: crate::audit::AuditLog::off(),
            audit_retention: None,
            transform_check: None,
            implicit: crate::data_transform::DataTransform::Reveal,
            cvc: crate::token::CvcRetention::default(),
            signing: Arc::default(),
        }
    }

    /// This vault, keeping a card's CVC for `cvc` after the token's creation
    /// (`--cvc-retention`; an hour unless set): reads, searches and proxies no longer see it
    /// once the retention has passed, and [`Vault::sweep`] seals the data again without it
    /// (docs/operations.md, "CVC retention").
    pub fn with_cvc_retention(mut self, cvc: crate::token::CvcRetention) -> Self {
        self.cvc = cvc;
        self
    }

    /// This vault, with permissions granted without rules showing token data as `implicit`
    /// (`--implicit-transform`): `reveal`, the default, or `mask`, Basis Theory's implicit
    /// transforms (docs/api.md, "Transforms"). Rules always carry their own.
    pub fn with_implicit_transform(
        mut self,
        implicit: crate::data_transform::DataTransform,
    ) -> Self {
        self.implicit = implicit;
        self
    }

    /// The caller `app` is, under this vault's implicit transform.
    pub(crate) fn principal(&self, app: &crate::application::Application) -> Principal {
        Principal::new(app).with_implicit_transform(self.implicit)
    }

    /// Sets how long API-key and proxy-key lookups, proxies' applications, and the encrypted
    /// token rows the gateway reads, are cached (default 1 s; zero disables). Changes made through this vault
    /// invalidate at once; changes made by other processes are seen within `ttl`.
    pub fn with_cache_ttl(mut self, ttl: Duration) -> Self {
        self.api_keys = caches::api_keys(ttl);
        self.proxies = caches::proxies(ttl);
        self.token_rows = caches::token_rows(ttl);
        self.applications = caches::applications(ttl);
        self
    }

    /// Sets how long the encrypted token rows the gateway reads are cached, apart from the
    /// credential caches (call after [`Vault::with_cache_ttl`]): operators whose traffic rarely
    /// repeats a token may keep keys cached and tokens not.
    pub fn with_token_cache_ttl(mut self, ttl: Duration) -> Self {
        self.token_rows = caches::token_rows(ttl);
        self
    }

    /// Drops cached credentials of `application` after it changed or was deleted.
    fn forget_application(&self, application: ApplicationId) {
        self.api_keys
            .remove_where(|_, p| p.application_id() == application);
        self.applications
            .remove_where(|(_, id), _| *id == application);
    }

    /// Drops the cached lookups of a proxy after it changed or was deleted.
    fn forget_proxy(&self, id: ProxyId) {
        self.proxies.remove_where(|_, p| p.id == id);
    }

    /// Compiles proxies' transform code with `check` when they are created or updated, refusing
    /// code that does not compile (a validation error naming the field). The servers always
    /// set it; a vault without one stores transform code unchecked.
    pub fn with_transform_check(
        mut self,
        check: Arc<dyn crate::transform_check::TransformCheck>,
    ) -> Self {
        self.transform_check = Some(check);
        self
    }

    /// Sets which proxy destinations are accepted (default: public `https` only).
    pub fn with_destination_policy(mut self, policy: DestinationPolicy) -> Self {
        self.destinations = policy;
        self
    }

    /// The underlying store, for health checks.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Turns a presented API key (the `<PREFIX>-API-KEY` header's value) into a [`Principal`].
    ///
    /// Lookups by key hash are cached briefly (see [`Vault::with_cache_ttl`]); a revoked or
    /// regenerated key, or a deleted application, stops working at once in this process. The
    /// keys of an expired application are refused exactly like unknown keys (docs/api.md,
    /// "Application keys"), cached or not.
    pub async fn authenticate(&self, presented: Option<&str>) -> Result<Principal, VaultError> {
        let presented = presented.ok_or(VaultError::Unauthenticated(
            "an API key is required, in the <PREFIX>-API-KEY header (SVC-API-KEY unless --header-prefix sets another)",
        ))?;
        let key = ApiKey::parse(presented)
            .ok_or(VaultError::Unauthenticated("the API key is malformed"))?;
        let cache_key = Secret::new(presented.to_string());
        let cached = self.api_keys.get(&cache_key);
        let principal = match cached {
            Some(p) => p,
            None => {
                let ticket = self.api_keys.begin();
                let hash = key.hash();
                let found = match self.store.find_application_by_key_hash(&hash).await? {
                    Some(stored) if stored.key.key_hash.verify(&hash) => {
                        Some(self.principal(&stored.application))
                    }
                    _ => None,
                };
                self.api_keys.insert(ticket, cache_key, found.clone());
                found
            }
        };
        principal
            .filter(|p| !p.is_expired(crate::timestamp::now()))
            .ok_or(VaultError::Unauthenticated(UNKNOWN_KEY))
    }

    /// Authenticates a caller that must belong to `tenant` (a proxy's caller must be of the
    /// proxy's tenant). A valid key of another tenant gets exactly the unknown-key error, so the
    /// answer never hints that the key exists elsewhere.
    pub async fn authenticate_in(
        &self,
        tenant: TenantId,
        presented: Option<&str>,
    ) -> Result<Principal, VaultError> {
        Self::confine(self.authenticate(presented).await, tenant)
    }

    /// What [`Vault::authenticate_in`] answers, given what [`Vault::authenticate`] answered for
    /// the same key: for a caller that looked its key up before it knew the tenant (the gateway
    /// looks up the API key while it finds the proxy, not after).
    pub fn confine(
        authenticated: Result<Principal, VaultError>,
        tenant: TenantId,
    ) -> Result<Principal, VaultError> {
        let principal = authenticated?;
        if principal.tenant_id() == tenant {
            Ok(principal)
        } else {
            Err(VaultError::Unauthenticated(UNKNOWN_KEY))
        }
    }

    /// Checks that the configured master keys open every tenant's data key (one unwrap per
    /// tenant), so a wrong key — or one that a rotation has not finished moving every tenant
    /// to — stops start-up instead of failing that tenant's requests later. The unwraps run
    /// [`START_UNWRAPS_IN_FLIGHT`] at a time: an HSM or a KMS sees a bounded burst however many
    /// tenants there are (docs/operations.md, "Where the master key lives").
    pub async fn verify_master_key(&self) -> Result<(), VaultError> {
        use futures_util::{stream, TryStreamExt};
        if let Err(e) = self.keys.lookup_key(self.store.as_ref()).await {
            tracing::error!("no configured master key opens the proxy-key lookup key");
            return Err(e);
        }
        // Each tenant's key is unwrapped once here and then held: with an HSM or a KMS, the
        // first request of each tenant does not call it again.
        let mut tenants = self.store.list_tenants().await?;
        // A tenant whose keys are destroyed is being deleted: nothing to open.
        tenants.retain(|tenant| {
            let destroyed = tenant.wrapped_data_key.is_empty();
            if destroyed {
                tracing::warn!(
                    tenant = %tenant.tenant.id,
                    "this tenant's keys are destroyed but its rows are not deleted: run `api tenants delete` for it again"
                );
            }
            !destroyed
        });
        stream::iter(tenants.iter().map(Ok))
            .try_for_each_concurrent(START_UNWRAPS_IN_FLIGHT, |tenant| async move {
                self.keys
                    .hold(self.store.as_ref(), tenant)
                    .await
                    .inspect_err(|_| {
                        tracing::error!(
                            tenant = %tenant.tenant.id,
                            "no configured master key opens this tenant's data key"
                        );
                    })
            })
            .await
    }

    /// The deployment's own wrapped keys: the proxy-key lookup key, the cursor key and the
    /// webhook signing keys.
    async fn vault_key_names(&self) -> Result<Vec<String>, VaultError> {
        let mut names = vec![
            crate::lookup::PROXY_KEY_LOOKUP.to_string(),
            crate::cursor::CURSOR_KEY.to_string(),
        ];
        names.extend(self.signing_key_names().await?);
        Ok(names)
    }

    /// Whether the database holds anything a master key wrapped (a tenant's data key, or the
    /// vault's own keys): start-up never gives such a database a newly generated key
    /// (docs/operations.md, "Backups").
    pub async fn holds_wrapped_keys(&self) -> Result<bool, VaultError> {
        if !self.store.list_tenants().await?.is_empty() {
            return Ok(true);
        }
        for name in self.vault_key_names().await? {
            if self.store.get_vault_key(&name).await?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Re-wraps every tenant's data key that a previous master key wraps under the current
    /// one. Token data is not re-encrypted (the data keys do not change). Safe to run again,
    /// and to interrupt: each tenant is updated on its own, only if its wrapped key is still the
    /// one that was read. Fails, leaving the rest untouched, on a tenant that no configured key
    /// opens.
    pub async fn rotate_master_key(&self) -> Result<Rotation, VaultError> {
        let mut report = Rotation::default();
        for name in self.vault_key_names().await? {
            let Some(wrapped) = self.store.get_vault_key(&name).await? else {
                continue;
            };
            if let Some(rewrapped) = self.keys.rewrap_vault_key(&name, &wrapped).await? {
                if !self
                    .store
                    .replace_vault_key(&name, &wrapped, &rewrapped)
                    .await?
                {
                    report.changed_concurrently += 1;
                }
            }
        }
        for tenant in self.store.list_tenants().await? {
            report.changed_concurrently += self.rewrap_later_keys(&tenant).await?;
            let Some(rewrapped) = self.keys.rewrap(&tenant).await? else {
                report.already_current += 1;
                continue;
            };
            if self
                .store
                .replace_wrapped_data_key(tenant.tenant.id, &tenant.wrapped_data_key, &rewrapped)
                .await?
            {
                report.rewrapped += 1;
                let id = tenant.tenant.id;
                let event = AuditEvent::success(
                    id,
                    AuditAction::TenantKeyRewrapped,
                    Actor::Operator,
                    vec![id.into()],
                );
                if let Err(e) = self.audit.record(vec![event]).await {
                    tracing::error!(tenant = %id, error = %e, "cannot record the re-wrap in the audit trail");
                }
            } else {
                // Changed since it was read: only another rotation does that.
                report.changed_concurrently += 1;
            }
        }
        Ok(report)
    }
}

impl Vault {
    /// Re-wraps `tenant`'s later data-key versions and index keys under the current custody
    /// (each only if unchanged since read); how many had changed meanwhile.
    async fn rewrap_later_keys(&self, tenant: &StoredTenant) -> Result<usize, VaultError> {
        let id = tenant.tenant.id;
        let mut changed = 0;
        for version in self.store.data_key_versions(id).await? {
            let purpose = WrapPurpose::DataKeyVersion(id, version.version);
            if let Some(new) = self
                .keys
                .rewrap_tenant_key(purpose, &version.wrapped)
                .await?
            {
                if !self
                    .store
                    .replace_data_key_version(id, version.version, &version.wrapped, &new)
                    .await?
                {
                    changed += 1;
                }
            }
        }
        if let Some(index) = &tenant.wrapped_index_keys {
            let purpose = WrapPurpose::IndexKeys(id);
            if let Some(new) = self.keys.rewrap_tenant_key(purpose, index).await? {
                if !self.store.replace_index_keys(id, index, &new).await? {
                    changed += 1;
                }
            }
        }
        Ok(changed)
    }
}

/// How many tenants' data keys [`Vault::verify_master_key`] unwraps at once at start-up.
pub const START_UNWRAPS_IN_FLIGHT: usize = 8;

/// What [`Vault::rotate_master_key`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Tenants whose data key was re-wrapped under the current master key.
    pub rewrapped: usize,
    /// Tenants already under the current master key.
    pub already_current: usize,
    /// Tenants whose wrapped key changed while the rotation ran (another rotation); run again.
    pub changed_concurrently: usize,
}
