//! The vault's caches: their byte budgets and what their entries weigh (docs/architecture.md,
//! "Caches").

use std::{mem::size_of, sync::Arc, time::Duration};

use crate::{
    access::Principal,
    binding::DestinationPattern,
    cache::{CacheUsage, LookupCache, TtlCache},
    ids::{ApplicationId, TenantId, TokenId},
    proxy::Proxy,
    secret::Secret,
    store::StoredToken,
};

use super::Vault;

const MIB: u64 = 1024 * 1024;
/// Principals found by API key.
const API_KEYS_BUDGET: u64 = 32 * MIB;
/// Proxies found by invocation key (a proxy's transforms may take ~100 KiB).
const PROXIES_BUDGET: u64 = 64 * MIB;
/// Keys known not to exist, of either kind: enough for tens of thousands.
const UNKNOWN_KEYS_BUDGET: u64 = 4 * MIB;
/// Encrypted token rows used by the gateway.
const TOKEN_ROWS_BUDGET: u64 = 64 * MIB;
/// Principals of proxies' applications.
const APPLICATIONS_BUDGET: u64 = 16 * MIB;
/// Bytes counted for each pair of a string map beyond its text (two `String`s and the tree).
const MAP_PAIR_OVERHEAD: usize = 2 * size_of::<String>() + 16;

/// How much each of the vault's caches holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CachesUsage {
    /// Principals found by API key.
    pub api_keys: CacheUsage,
    /// API keys known not to exist.
    pub unknown_api_keys: CacheUsage,
    /// Proxies found by invocation key.
    pub proxies: CacheUsage,
    /// Proxy keys known not to exist.
    pub unknown_proxy_keys: CacheUsage,
    /// Encrypted token rows.
    pub token_rows: CacheUsage,
    /// Principals of proxies' applications.
    pub applications: CacheUsage,
}

impl CachesUsage {
    /// All caches together.
    pub fn total(&self) -> CacheUsage {
        self.api_keys
            + self.unknown_api_keys
            + self.proxies
            + self.unknown_proxy_keys
            + self.token_rows
            + self.applications
    }
}

impl Vault {
    /// How much the in-memory caches hold now.
    pub fn cache_usage(&self) -> CachesUsage {
        let (api_keys, unknown_api_keys) = self.api_keys.usage();
        let (proxies, unknown_proxy_keys) = self.proxies.usage();
        CachesUsage {
            api_keys,
            unknown_api_keys,
            proxies,
            unknown_proxy_keys,
            token_rows: self.token_rows.usage(),
            applications: self.applications.usage(),
        }
    }
}

/// Presented API key → principal, or known unknown.
pub(super) fn api_keys(ttl: Duration) -> Arc<LookupCache<Secret<String>, Principal>> {
    Arc::new(LookupCache::new(
        TtlCache::with_budget(ttl, API_KEYS_BUDGET, |key, principal| {
            key_bytes(key) + principal.heap_bytes()
        }),
        unknown_keys(ttl),
    ))
}

/// Presented proxy key → proxy, or known unknown.
pub(super) fn proxies(ttl: Duration) -> Arc<LookupCache<Secret<String>, Arc<Proxy>>> {
    Arc::new(LookupCache::new(
        TtlCache::with_budget(ttl, PROXIES_BUDGET, |key, proxy| {
            key_bytes(key) + size_of::<Proxy>() + proxy_bytes(proxy)
        }),
        unknown_keys(ttl),
    ))
}

/// Token rows, encrypted.
pub(super) fn token_rows(ttl: Duration) -> Arc<TtlCache<(TenantId, TokenId), StoredToken>> {
    Arc::new(TtlCache::with_budget(ttl, TOKEN_ROWS_BUDGET, |_, row| {
        token_bytes(row)
    }))
}

/// Application → principal.
pub(super) fn applications(ttl: Duration) -> Arc<TtlCache<(TenantId, ApplicationId), Principal>> {
    Arc::new(TtlCache::with_budget(ttl, APPLICATIONS_BUDGET, |_, p| {
        p.heap_bytes()
    }))
}

fn unknown_keys(ttl: Duration) -> TtlCache<Secret<String>, ()> {
    TtlCache::with_budget(ttl, UNKNOWN_KEYS_BUDGET, |key, ()| key_bytes(key))
}

fn key_bytes(key: &Secret<String>) -> usize {
    key.expose().capacity()
}

/// What a proxy owns on the heap (its inline size aside).
fn proxy_bytes(proxy: &Proxy) -> usize {
    let text = |s: &Option<Secret<String>>| s.as_ref().map_or(0, |s| s.expose().capacity());
    let configuration = proxy.configuration.as_ref().map_or(0, |c| {
        c.expose()
            .iter()
            .map(|(k, v)| k.capacity() + v.capacity() + MAP_PAIR_OVERHEAD)
            .sum()
    });
    proxy.name.capacity()
        + proxy.key.expose().capacity()
        // The text, and the parsed URL's copy of it.
        + 2 * proxy.destination_url.capacity()
        + text(&proxy.request_transform)
        + text(&proxy.response_transform)
        + configuration
}

/// What a token row owns on the heap.
fn token_bytes(row: &StoredToken) -> usize {
    let metadata: usize = row
        .metadata
        .iter()
        .map(|(k, v)| k.capacity() + v.capacity() + MAP_PAIR_OVERHEAD)
        .sum();
    let destinations = row.destinations.as_ref().map_or(0, |d| {
        d.patterns()
            .map(|p| size_of::<DestinationPattern>() + 2 * p.len())
            .sum()
    });
    row.ciphertext.capacity()
        + row.container.as_str().len()
        + row.fingerprint.capacity()
        + metadata
        + destinations
}
