//! Parent and child links between tokens: [`AssociationStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{AssociationStore, NewAssociation, StoreError, StoredToken};
use tessera_domain::{TenantId, TokenId};

detached! {
    AssociationStore {
        spawned fn insert_association(link: &NewAssociation) -> ();
        spawned fn delete_association(tenant: TenantId, parent: TokenId, child: TokenId) -> bool;
        spawned fn insert_child_token(child: &StoredToken, link: &NewAssociation) -> ();
        spawned fn parent_ids(tenant: TenantId, child: TokenId, limit: u32) -> Vec<TokenId>;
    }
}
