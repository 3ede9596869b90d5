//! Parent → child links between tokens.

use async_trait::async_trait;
use time::OffsetDateTime;

use super::{tokens::StoredToken, StoreError};
use crate::{
    ids::{TenantId, TokenId},
    token::TokenType,
};

/// A parent → child link to be written. The child's creation time and type are copied into
/// the link so that listing a parent's children in page order, filtered by type, is answered
/// from one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAssociation {
    /// Tenant of both tokens.
    pub tenant_id: TenantId,
    /// The parent.
    pub parent_id: TokenId,
    /// The child.
    pub child_id: TokenId,
    /// The child's `created_at`.
    pub child_created_at: OffsetDateTime,
    /// The child's type.
    pub child_type: TokenType,
    /// When the link was made.
    pub created_at: OffsetDateTime,
}

/// Parent → child links between tokens. Listing children goes through
/// [`TokenListing::list_tokens`](super::TokenListing::list_tokens) with [`TokenFilter::parent`] set.
#[async_trait]
pub trait AssociationStore: Send + Sync {
    /// Links parent → child; linking an existing pair again changes nothing.
    async fn insert_association(&self, link: &NewAssociation) -> Result<(), StoreError>;
    /// Removes a link; `false` when there was none.
    async fn delete_association(
        &self,
        tenant: TenantId,
        parent: TokenId,
        child: TokenId,
    ) -> Result<bool, StoreError>;
    /// Writes a new token (with its metadata) and its link to the parent in one transaction,
    /// so a failure leaves no orphan token.
    async fn insert_child_token(
        &self,
        child: &StoredToken,
        link: &NewAssociation,
    ) -> Result<(), StoreError>;
    /// The parents of `child` (at most `limit`, in the order the links were made): the
    /// reverse of a children list, answered from the `(tenant, child)` index.
    async fn parent_ids(
        &self,
        tenant: TenantId,
        child: TokenId,
        limit: u32,
    ) -> Result<Vec<TokenId>, StoreError>;
}
