//! Tokens: each part of [`TokenStore`](tessera_domain::store::TokenStore) on
//! [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::Position;
use tessera_domain::store::{
    ContainerScope, Duplicate, StoreError, StoredToken, TokenFilter, TokenInserts, TokenListing,
    TokenRecords, TokenSearch, TokenSearching, TokenUpdate, TokenUpkeep,
};
use tessera_domain::{Container, Page, PageRequest, TenantId, TokenId};
use time::OffsetDateTime;

detached! {
    TokenInserts {
        spawned fn insert_token(token: &StoredToken) -> ();
        spawned fn insert_tokens(tokens: &[StoredToken]) -> ();
    }
}

detached! {
    TokenRecords {
        caller fn get_token(tenant: TenantId, id: TokenId) -> Option<StoredToken>;
        batched fn get_tokens(tenant: TenantId, ids: &[TokenId]) -> Vec<StoredToken>;
        spawned fn update_token(update: &TokenUpdate) -> bool;
        spawned fn delete_token(tenant: TenantId, id: TokenId) -> bool;
        caller fn find_duplicate_token(tenant: TenantId, duplicate: &Duplicate<'_>, live_at: OffsetDateTime) -> Option<StoredToken>;
    }
}

detached! {
    TokenListing {
        scan fn token_containers(tenant: TenantId, filter: &TokenFilter) -> Vec<Container>;
        scan fn list_tokens(tenant: TenantId, filter: &TokenFilter, scope: &ContainerScope, page: PageRequest) -> Page<StoredToken>;
    }
}

detached! {
    TokenSearching {
        scan fn search_containers(tenant: TenantId, search: &TokenSearch) -> Vec<Container>;
        scan fn search_tokens(tenant: TenantId, search: &TokenSearch, scope: &ContainerScope, page: PageRequest) -> Page<StoredToken>;
        scan fn search_tokens_after(tenant: TenantId, search: &TokenSearch, scope: &ContainerScope, after: Option<Position>, limit: u32) -> Vec<StoredToken>;
    }
}

detached! {
    TokenUpkeep {
        spawned fn delete_expired_tokens(now: OffsetDateTime, limit: u32) -> Vec<(TenantId, TokenId)>;
        spawned fn tokens_holding_cvc(created_by: OffsetDateTime, limit: u32) -> Vec<StoredToken>;
        spawned fn unfingerprinted_tokens(limit: u32) -> Vec<StoredToken>;
        spawned fn set_token_fingerprint(tenant: TenantId, id: TokenId, fingerprint: &str) -> ();
    }
}
